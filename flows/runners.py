"""Task runners chosen in params.yaml (``scale``): judging in-process, or sharded over
a Dask cluster, a local one with N worker processes or an existing scheduler."""

from __future__ import annotations

from judgeaudit.config import Scale


def task_runner(scale: Scale):
    """A Prefect task runner for ``scale``; None for in-process, one task after another."""
    if scale.runner == "local":
        return None
    from prefect_dask import DaskTaskRunner

    if scale.address:
        return DaskTaskRunner(address=scale.address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": scale.workers, "threads_per_worker": scale.threads_per_worker,
                                          "processes": True, "dashboard_address": ":0"})
