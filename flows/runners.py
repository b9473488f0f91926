"""Task runners chosen in params.yaml (``scale``): judging in-process, or sharded over
a Dask cluster, a local one with N worker processes or an existing scheduler; a stage's
independent heavy tasks over a pool of worker processes."""

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


def _one_thread(run_pid: int) -> None:
    """Worker-process initializer: torch on one intra-op thread (the workers share the
    cores), and the worker ends when the run that started it is gone: a killed run's
    workers would otherwise finish their task (minutes of training) and write its outputs
    while the next run writes the same ones."""
    import os
    import threading
    import time

    def watch() -> None:
        # the run's pid, not the parent seen here: a worker still starting when the run was
        # killed is already an orphan when this runs
        while os.getppid() == run_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="judgeaudit-exit-with-run").start()  # before the long imports
    import torch

    torch.set_num_threads(1)


def parallel(scale: Scale):
    """A runner for a stage's independent heavy tasks (``runner.submit(task, kwargs)``):
    ``scale.processes`` worker processes of one torch thread each, or one task after
    another in-process when 1. The small embedded models use a second core poorly (a
    training step: 2.0 s on two threads, 2.5 s on one), so two one-thread workers do
    about 1.6x the work of one two-thread process."""
    from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

    if scale.processes > 1:
        import os

        return ProcessPoolTaskRunner(max_workers=scale.processes, initializer=_one_thread, initargs=(os.getpid(),))
    return ThreadPoolTaskRunner(max_workers=1)
