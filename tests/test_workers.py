"""Worker processes end with the process that started them, whatever kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, gone, parent, running

SCRIPT = """
import multiprocessing, time
from judgeaudit.workers import spawned_pool

if __name__ == "__main__":
    with spawned_pool(2) as pool:
        assert pool.submit(sum, [1, 2]).result() == 3
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
        time.sleep(600)
"""


def test_a_killed_parents_workers_exit(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(running(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert all(gone(p, within_s=10) for p in workers), "a worker outlived its killed parent"
    finally:
        parent.kill()


def test_one_worker_runs_inline():
    from judgeaudit.workers import spawned_pool

    with spawned_pool(1) as pool:
        assert pool is None


FORKED = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver
from judgeaudit.workers import exit_with, fork_server

if __name__ == "__main__":
    assert fork_server(["json"])
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"),
                               initializer=exit_with, initargs=(os.getpid(),))
    list(pool.map(time.sleep, [0.5, 0.5]))  # both workers started
    workers = [p.pid for p in multiprocessing.active_children()]
    print(forkserver._forkserver._forkserver_pid, *workers, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is used on Linux only")
def test_a_killed_runs_forked_workers_exit(tmp_path):
    """Forked by the run's fork server, which its workers hold open after the run dies, the
    workers watch the run itself; then the server ends too."""
    script = tmp_path / "forked.py"
    script.write_text(FORKED)
    run = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        server, *workers = [int(p) for p in run.stdout.readline().split()]
        assert len(workers) == 2 and all(running(p) for p in (server, *workers))
        assert all(parent(w) == server for w in workers)  # forked by the server, not the run
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=10)
        assert all(gone(p, within_s=10) for p in workers), "a worker outlived its killed run"
        assert gone(server, within_s=10), "the fork server outlived the run and its workers"
    finally:
        run.kill()



SLOW_PRELOAD = """
import os, sys, time
from multiprocessing import forkserver
from judgeaudit.workers import fork_server

if __name__ == "__main__":
    assert fork_server(["slow_import"])
    print(forkserver._forkserver._forkserver_pid, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is used on Linux only")
def test_a_killed_runs_fork_server_ends_while_it_still_imports(tmp_path):
    """A run killed while its fork server imports the preloads (torch, transformers: 13 s and
    more) takes the server with it; before, the server ran on until its imports were done."""
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(120)\n")
    script = tmp_path / "preload.py"
    script.write_text(SLOW_PRELOAD)
    run = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": f"{ROOT}:{tmp_path}"})
    try:
        server = int(run.stdout.readline())
        assert gone(server, within_s=3) is False  # importing slow_import, not failed
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=10)
        assert gone(server, within_s=10), "the fork server outlived its killed run while importing"
    finally:
        run.kill()
