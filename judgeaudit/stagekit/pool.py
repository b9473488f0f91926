"""Where a stage's units run: in the stage's process, or over worker processes of one torch
thread each (``scale.processes``), or over a Dask cluster (judging; ``scale.runner: dask``).
A stage submits module-level functions (``pool.submit(fn, **kwargs)``) and gets
``concurrent.futures`` futures back; the stage's one progress bar counts its units.

One torch thread per unit, wherever it runs: a task on two threads sums its floating-point
reductions in another order than on one (a Spearman rho of the tiny audit moved from
-0.2285 to -0.2311), so one thread keeps ``scale``, which DVC does not track, out of the
results. Workers are forked from the standard library's fork server, which imports the
stage's code once while the stage process imports its own (a spawned worker imports torch,
transformers and the stage anew before its first unit: judgeaudit/workers.py); each worker
exits as soon as the stage process that started it is gone, so a killed run leaves nothing
running."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, TypeVar

from tqdm.auto import tqdm

from judgeaudit import precision

T = TypeVar("T")
# what every worker imports before its first unit, beside its stage's module
PRELOAD = ("judgeaudit.training.trainers", "judgeaudit.models.hf")


def bar(name: str, total: int = 0, unit: str = "task") -> tqdm:
    """A stage's one progress bar, shown from its first second on."""
    return tqdm(total=total, desc=name, unit=unit, dynamic_ncols=True, delay=1)


def _worker_start(run_pid: int, setting: str) -> None:
    """A worker's first act: end with the stage process, take its precision, one torch thread.
    Ctrl-C reaches the whole process group: the stage process alone answers it (and stops its
    workers), so a worker does not print a traceback of its own."""
    import signal

    from judgeaudit.workers import exit_with

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with(run_pid)
    precision.set_current(setting)
    import torch

    torch.set_num_threads(1)


class Pool:
    """A stage's units: ``submit(fn, **kwargs)`` -> Future. In-process (``workers`` 1) each
    runs at once, on one torch thread (``one_thread``; judging in turn keeps every core), as
    in a worker; the stage's own code between units keeps every core either way. Else over
    ``workers`` forked processes."""

    def __init__(self, name: str, workers: int = 1, one_thread: bool = True,
                 preload: Iterable[str] = (), executor: Executor | None = None) -> None:
        self.name, self.workers, self.one_thread = name, workers, one_thread
        self._preload, self._executor, self._own = tuple(preload), executor, executor is None
        self._bar: tqdm | None = None
        if workers > 1 and executor is None:
            from judgeaudit.workers import fork_server

            self._forked = fork_server((*PRELOAD, *self._preload))  # its imports overlap the stage's own

    def __enter__(self) -> Pool:
        self._bar = bar(self.name)
        if self.workers > 1 and self._executor is None:
            import multiprocessing

            method = "forkserver" if self._forked else "spawn"
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method),
                                                 initializer=_worker_start,
                                                 initargs=(os.getpid(), precision.current()))
        return self

    @property
    def bar(self) -> tqdm | None:
        """The stage's progress bar (a library step counter: judgeaudit.progress)."""
        return self._bar

    def submit(self, fn: Callable[..., T], /, **kwargs: Any) -> Future:
        assert self._bar is not None, "submit inside `with pool:`"
        if self._executor is None:
            future: Future = Future()
            try:
                future.set_result(_one_thread(fn, kwargs) if self.one_thread else fn(**kwargs))
            except Exception as exc:  # raised by result(), as from a worker
                future.set_exception(exc)
        else:
            future = self._executor.submit(fn, **kwargs)
        self._bar.total += 1
        self._bar.refresh()
        future.add_done_callback(lambda _: self._bar.update())
        return future

    def each(self, items: Iterable[T]) -> Iterator[T]:
        """``items`` one by one in this process, the bar advancing after each."""
        items = list(items)
        self._bar.total += len(items)
        for item in items:
            yield item
            self._bar.update()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self._executor is not None and self._own:
                if exc_type is not None:  # a failed unit or a signal: stop the running ones, not wait for them
                    for process in list((getattr(self._executor, "_processes", None) or {}).values()):
                        process.terminate()
                self._executor.shutdown(wait=True, cancel_futures=True)
        finally:
            if self._bar is not None:
                self._bar.close()


def _one_thread(fn: Callable[..., T], kwargs: dict) -> T:
    """``fn(**kwargs)`` on one torch thread, the process's setting restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(**kwargs)
    finally:
        torch.set_num_threads(threads)


def dask_executor(workers: int, threads_per_worker: int, address: str | None) -> Executor:
    """A Dask client (``distributed``) as a ``concurrent.futures`` executor: a cluster of its
    own of ``workers`` processes, or the scheduler at ``address``. Each worker, joining now or
    later, takes this process's precision (a plugin: Dask's workers share no state with it)."""
    from distributed import Client, LocalCluster
    from distributed.diagnostics.plugin import WorkerPlugin

    class Precision(WorkerPlugin):
        def __init__(self, setting: str) -> None:
            self.setting = setting

        def setup(self, worker) -> None:
            precision.set_current(self.setting)

    if address:
        client = Client(address)
    else:
        client = Client(LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                                     dashboard_address=":0"))
    client.register_plugin(Precision(precision.current()), name="judgeaudit-precision")
    return client.get_executor()
