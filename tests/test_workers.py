"""Worker processes end with the process that started them, whatever kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import ROOT, gone, running

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
