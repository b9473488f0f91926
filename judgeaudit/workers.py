"""Worker processes that end with the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor


def exit_with(run_pid: int) -> None:
    """In a worker process: exit as soon as the run ``run_pid`` that started it is gone. A
    killed run's workers would otherwise finish their task, or wait for the next, for nothing."""
    # spawned by the run: watch the parent's pid, not the parent seen here (a worker still
    # starting when its run was killed is an orphan already); forked by the run's fork
    # server, which outlives the run while its workers hold it open: watch the run itself
    spawned = os.getppid() == run_pid

    def watch() -> None:
        while (os.getppid() == run_pid) if spawned else running(run_pid):
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="judgeaudit-exit-with-parent").start()


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie waits for its parent to
    reap it); Linux's /proc, where the fork server is used."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``sig`` to this process once the thread that started it has
    exited (Linux's PR_SET_PDEATHSIG); whether it could. Safe between fork and exec."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, sig) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not glibc Linux: the callers' other guards remain
        return False


# the run's pid, in the environment of the fork server it starts from its main thread: the
# server's first preload (judgeaudit.fork_server_guard) then ends with that run
FORK_SERVER_RUN = "JUDGEAUDIT_FORK_SERVER_RUN"
_fork_server_preloads = False  # set_forkserver_preload called: later calls keep the first list


def fork_server(preload: Sequence[str] = ()) -> bool:
    """Start this process's fork server the first time (with ``preload`` imported), and
    whether workers are forked from it: False off Linux, where they are spawned as before.
    A spawned worker imports torch, transformers, trl, Prefect and the stage's code anew
    (about 13 s of a core each on a 2-core AMD EPYC, two per stage) while the stage waits. Forked
    from a server that imported them once, while the stage imported its own code, it starts
    at once. The server runs no Python thread and no task (its native thread pools, OpenBLAS's
    and jemalloc's, reset at a fork), so a fork copies no lock mid-use, as forking the stage
    process, with Prefect's threads, would. The server only notices its run has gone
    between forks: ``judgeaudit.fork_server_guard``, its first preload, ends it with its
    run while it still imports the rest (13 s of an idle core here, over 20 s of a loaded one).
    """
    global _fork_server_preloads
    if not sys.platform.startswith("linux"):
        return False
    import multiprocessing
    from multiprocessing import forkserver

    if not _fork_server_preloads:
        _fork_server_preloads = True
        multiprocessing.get_context("forkserver").set_forkserver_preload(
            ["judgeaudit.fork_server_guard", *preload])
    # the kernel's signal follows the starting thread, so only the main thread asks for it
    main = threading.current_thread() is threading.main_thread()
    if main:
        os.environ[FORK_SERVER_RUN] = str(os.getpid())
    try:
        forkserver.ensure_running()  # started once; again only if it died
    finally:
        if main:
            os.environ.pop(FORK_SERVER_RUN, None)
    return True


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
