"""Worker processes that end with the process that started them."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor


def exit_with(parent_pid: int) -> None:
    """In a worker process: exit as soon as ``parent_pid`` is no longer its parent. A killed
    run's workers would otherwise finish their task, or wait for the next, for nothing."""
    def watch() -> None:
        # the parent's pid, not the parent seen here: a worker still starting when its
        # parent was killed is an orphan already
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="judgeaudit-exit-with-parent").start()


def _start(parent_pid: int, module: str) -> None:
    exit_with(parent_pid)
    __import__(module)


@contextlib.contextmanager
def spawned_pool(workers: int, warm: str = "numpy") -> Iterator[Executor | None]:
    """``workers`` fresh processes that end with this one, each importing module ``warm``
    as it starts (so their start overlaps the caller's work until the first task); None
    for one worker: the caller runs its tasks inline. Spawned, not forked: a stage process
    runs Prefect's threads, which a fork would copy mid-lock."""
    if workers <= 1:
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start, initargs=(os.getpid(), warm))
    try:
        for _ in range(workers):  # start them all now
            pool.submit(int)
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
