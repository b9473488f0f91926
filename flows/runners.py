"""Task runners chosen in params.yaml (``scale``): judging in-process, or sharded over
a Dask cluster, a local one with N worker processes or an existing scheduler; a stage's
independent heavy tasks over a pool of worker processes. Each stage shows one progress
bar, of its tasks done: the models' own per-call bars are off in the stages."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from tqdm.auto import tqdm

from judgeaudit.config import Scale
from judgeaudit.progress import each

T = TypeVar("T")


def stage_bar(total: int = 0, unit: str = "task") -> tqdm:
    """The stage's one progress bar, named for the running flow, counting its tasks (or, in
    a stage of one long task, the library's steps: ``judgeaudit.progress``)."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    name = context.flow.name if context and context.flow else "stage"
    return tqdm(total=total, desc=name, unit=unit, dynamic_ncols=True, delay=1)  # shown from the first task's end


def tracked(items: Sequence[T]) -> Iterator[T]:
    """``items`` one by one, the stage's bar advancing after each (tasks run in turn)."""
    with stage_bar() as bar:
        yield from each(bar, items)


def results(futures: Iterable[Any]) -> list:
    """The futures' results in their order, the stage's bar advancing as each task ends."""
    futures = list(futures)
    with stage_bar(len(futures)) as bar:
        for future in futures:
            future.add_done_callback(lambda _: bar.update())
        return [future.result() for future in futures]


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


def _one_thread(run_pid: int, precision: str) -> None:
    """Worker-process initializer: torch on one intra-op thread (the workers share the
    cores), the run's precision (a fork server started earlier, by another flow of the
    process, holds the environment of then), and the worker ends when the run that started
    it is gone: a killed run's workers would otherwise finish their task (minutes of
    training) and write its outputs while the next run writes the same ones."""
    import os

    from judgeaudit.precision import VARIABLE
    from judgeaudit.workers import exit_with

    exit_with(run_pid)  # before the long imports
    os.environ[VARIABLE] = precision
    import torch

    torch.set_num_threads(1)


def parallel(scale: Scale):
    """A runner for a stage's independent heavy tasks (``runner.submit(task, kwargs)``):
    ``scale.processes`` worker processes of one torch thread each, or one task after
    another in-process when 1, on one torch thread too. The small embedded models use a
    second core poorly (a training step: 2.0 s on two threads, 2.5 s on one), so two
    one-thread workers do about 1.6x the work of one two-thread process; and a task on
    two threads sums its floating-point reductions in another order than on one, which
    moved the tiny audit's correlations (a Spearman rho from -0.2285 to -0.2311 between
    ``processes: 1`` and ``2``): one thread wherever a task runs keeps ``scale`` out of
    the results, as DVC, which does not track it, assumes."""
    if scale.processes > 1:
        import os

        from judgeaudit import precision
        from judgeaudit.workers import fork_server

        pool = _pool_ending_its_workers_on_error(forked=fork_server(WORKER_PRELOAD))
        return _with_bar(pool)(max_workers=scale.processes, initializer=_one_thread,
                               initargs=(os.getpid(), precision.current()))
    return _with_bar(_in_process_on_one_thread())(max_workers=1)


def _with_bar(runner: type) -> type:
    """``runner`` with the stage's bar: each submitted task adds to its total, each ended
    one advances it."""
    class WithBar(runner):
        def __enter__(self):
            self._bar = stage_bar()
            return super().__enter__()

        def submit(self, task, parameters=None, wait_for=None, dependencies=None):
            future = super().submit(task, parameters, wait_for, dependencies)
            self._bar.total += 1
            future.add_done_callback(lambda _: self._bar.update())
            return future

        def __exit__(self, exc_type, exc_value, traceback) -> None:
            try:
                super().__exit__(exc_type, exc_value, traceback)
            finally:
                self._bar.close()

    return WithBar


def _in_process_on_one_thread() -> type:
    """Prefect's thread-pool runner of one worker thread, with torch on one intra-op thread
    while it is open (the setting is process-wide; the previous one comes back after)."""
    from prefect.task_runners import ThreadPoolTaskRunner

    class InProcess(ThreadPoolTaskRunner):
        def __enter__(self):
            import torch

            self._torch_threads = torch.get_num_threads()
            torch.set_num_threads(1)
            return super().__enter__()

        def __exit__(self, exc_type, exc_value, traceback) -> None:
            try:
                super().__exit__(exc_type, exc_value, traceback)
            finally:
                import torch

                torch.set_num_threads(self._torch_threads)

    return InProcess


# what every worker imports before its first task: started by `python -m flows.run STAGE`
# with that stage's module too (preload_workers), else by the first pool, with these
WORKER_PRELOAD = ("judgeaudit.training.trainers", "judgeaudit.models.hf", "prefect.task_engine",
                  "prefect_dask")


def preload_workers(stage: str | None, scale: Scale) -> None:
    """Start the fork server that a stage's pool forks its workers from, importing the
    stage's code (every stage's, for the whole audit) while the stage process imports its
    own; nothing for a stage without a pool, or where ``scale`` runs its tasks in-process."""
    from flows.registry import STAGES, stage as declared
    from judgeaudit.workers import fork_server

    pooled = [s for s in ([declared(stage)] if stage else STAGES) if s.pool]
    if pooled and scale.processes > 1:
        fork_server((*WORKER_PRELOAD, *(s.module for s in pooled)))


class _ForkServerContext:
    """The ``multiprocessing`` module as Prefect's process pool sees it: the context it asks
    for ("spawn", hard-coded) is the fork server's."""

    def __init__(self, multiprocessing) -> None:
        self._multiprocessing = multiprocessing

    def get_context(self, method: str | None = None):
        return self._multiprocessing.get_context("forkserver")

    def __getattr__(self, name: str):
        return getattr(self._multiprocessing, name)


def _pool_ending_its_workers_on_error(forked: bool = False) -> type:
    """Prefect's process pool whose exit, when the block raised (SIGTERM, a failed task),
    ends the workers first: Prefect's own exit waits for the running tasks, so a SIGTERM'd
    run went on for as long as its workers' model builds (over 60 s in a drill). ``forked``:
    its workers come from the fork server (``judgeaudit.workers.fork_server``)."""
    from prefect.task_runners import ProcessPoolTaskRunner

    class Pool(ProcessPoolTaskRunner):
        def __enter__(self):
            if not forked:
                return super().__enter__()
            import prefect.task_runners as prefect_runners

            spawning = prefect_runners.multiprocessing
            prefect_runners.multiprocessing = _ForkServerContext(spawning)
            try:
                return super().__enter__()
            finally:
                prefect_runners.multiprocessing = spawning

        def __exit__(self, exc_type, exc_value, traceback) -> None:
            if exc_type is not None and self._executor is not None:
                # ProcessPoolExecutor has no public way to stop a running call
                for process in list((getattr(self._executor, "_processes", None) or {}).values()):
                    process.terminate()
            super().__exit__(exc_type, exc_value, traceback)

    return Pool
