"""Worker processes end with the process that started them, whatever kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT

SCRIPT = """
import multiprocessing, time
from judgeaudit.workers import spawned_pool

if __name__ == "__main__":
    with spawned_pool(2) as pool:
        assert pool.submit(sum, [1, 2]).result() == 3
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
        time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_killed_parents_workers_exit(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "a worker outlived its killed parent"
    finally:
        parent.kill()


def test_one_worker_runs_inline():
    from judgeaudit.workers import spawned_pool

    with spawned_pool(1) as pool:
        assert pool is None
