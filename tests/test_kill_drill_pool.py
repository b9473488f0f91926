"""Drill: a stage run whose pool is busy, ended by SIGTERM or SIGKILL, leaves no worker
behind. Apart from tests/test_kill_drill.py, which compares with the session's run of the
tiny DAG: these two need no such run, so the suite's scheduler (tests/conftest.py) gives them
to whichever pytest worker is free, not to the one that runs the DAG."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.conftest import gone
from tests.test_kill_drill import _descendants, _env, _foreground_sigint, _start_and_find_fork_server, _workers

pytestmark = pytest.mark.slow


def test_sigterm_ends_the_run_and_its_workers(tmp_path, pooled_params_file):
    root = tmp_path / "data"
    proc, server = _start_and_find_fork_server(pooled_params_file, root, _env(tmp_path))
    deadline = time.monotonic() + 120
    while len(_workers(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    started = _descendants(proc.pid)  # the fork server and the two workers
    busy = time.monotonic() + 30  # the workers into their first task (building models)
    while time.monotonic() < busy and not (root / "models").exists():
        time.sleep(0.2)
    time.sleep(2)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    # not after the workers' running tasks (before, Prefect's pool exit waited for them: over 60 s)
    assert time.monotonic() - sent < 20, f"the run took {time.monotonic() - sent:.0f} s to end after SIGTERM"
    assert gone(server), "the fork server outlived the run"
    assert [pid for pid in started if not gone(pid)] == [], "a worker process outlived the run"


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_a_killed_runs_busy_workers_end_with_it(tmp_path, pooled_params_file):
    """SIGKILL while both pool workers are busy: they end within seconds, whether they
    were running a task or still starting up (before, they ran on as orphans for minutes:
    still alive 78 s after the kill in this drill, finishing work nobody would read)."""
    proc, _ = _start_and_find_fork_server(pooled_params_file, tmp_path / "data", _env(tmp_path))
    deadline = time.monotonic() + 240
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, "the workers never got busy"
        workers = _workers(proc.pid)
        if len(workers) == 2:
            before = [_cpu_ticks(w) for w in workers]
            time.sleep(0.3)
            if all(_cpu_ticks(w) - b >= 10 for w, b in zip(workers, before)):
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert [w for w in workers if not gone(w)] == [], "a worker outlived the killed run"


def test_ctrl_c_stops_the_run_within_seconds(tmp_path, pooled_params_file):
    """Ctrl-C in a terminal sends SIGINT to the whole process group (the run, its fork server,
    its workers): the run exits 130 within seconds with one line and no traceback, and
    nothing it started is left running."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    root = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "bootstrap", "--params",
                             str(pooled_params_file), "--root", str(root)], cwd=ROOT, env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_foreground_sigint)
    deadline = time.monotonic() + 240
    while len(_workers(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the workers never started"
        time.sleep(0.2)
    time.sleep(2)  # into their first task
    started = _descendants(proc.pid)
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert time.monotonic() - sent < 10, f"{time.monotonic() - sent:.0f} s to stop after Ctrl-C"
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert "interrupted" in err
    assert [pid for pid in started if not gone(pid)] == [], "a process the run started outlived Ctrl-C"
