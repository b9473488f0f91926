"""Task runners chosen in params.yaml (``scale``): judging in-process, or sharded over
a Dask cluster, a local one with N worker processes or an existing scheduler."""

from __future__ import annotations

from judgeaudit.config import Scale


def task_runner(scale: Scale):
    """A Prefect task runner for ``scale``: in-process, one task after another (models
    stay one at a time in memory), or a Dask cluster."""
    if scale.runner == "local":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=1)
    from prefect_dask import DaskTaskRunner

    if scale.address:
        return DaskTaskRunner(address=scale.address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": scale.workers, "threads_per_worker": scale.threads_per_worker,
                                          "processes": True, "dashboard_address": ":0"})
