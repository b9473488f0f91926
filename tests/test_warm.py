"""The warm stage process (flows/warm.py), with real processes: a stage handed over runs in
a child of it, with the caller's arguments, streams and exit status; signals reach it and
a killed caller ends it; it declines (the stage runs in its caller) where the environment
differs or a source was edited, and then exits. The whole tiny `dvc repro` through it, to
the bit, is test_dvc_repro's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.server import _stat
from flows.warm import _record
from tests.conftest import ROOT, gone, running, write_tiny_params

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm process is Linux only")]

# a stage's entry (`python -m flows.run ARGS`), saying whether it handed the stage over
_CALLER = """
import sys
from flows.warm import hand_over
status = hand_over(sys.argv[1:])
print("ran here" if status is None else f"handed over: {status}", flush=True)
sys.exit(status or 0)
"""
# the first stage's end (flows.run.run): start the warm process
_FIRST = "from flows.warm import hand_over, launch; hand_over([]); launch('{url}')"


def _children(pid: int) -> set[int]:
    tasks = Path(f"/proc/{pid}/task")
    return {int(c) for task in tasks.iterdir() for c in (task / "children").read_text().split()}


def _wait_for(predicate, within_s: float, what: str):
    deadline = time.monotonic() + within_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"no {what} within {within_s:.0f} s"
        time.sleep(0.2)
    return value


def test_stages_run_in_the_warm_process_until_it_declines(tmp_path, prefect_server):
    repo = tmp_path / "repo"
    for item in ("judgeaudit", "flows", "tasks"):
        shutil.copytree(ROOT / item, repo / item, ignore=shutil.ignore_patterns("__pycache__"))
    params = write_tiny_params(repo / "params.yaml", processes=2)
    # this test process stands for DVC: the processes it starts are its stages
    env = {**os.environ, "DVC_STAGE": "stage", "PYTHONPATH": str(repo), "JUDGEAUDIT_WARM": "1"}

    def stage(*args: str, **extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _CALLER, *args], cwd=repo, env={**env, **extra},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    subprocess.run([sys.executable, "-c", _FIRST.format(url=prefect_server)], cwd=repo, env=env, check=True)
    mine = _record((os.getpid(), _stat(os.getpid())[2]))  # this process is the "DVC run"
    warm = json.loads(mine.read_text())["pid"]
    try:
        _wait_for(lambda: json.loads(mine.read_text())["socket"], 180, "ready warm process")

        # handed over: the child parses the arguments and writes to the caller's streams
        out = stage("--help").communicate(timeout=60)[0]
        assert "usage: python -m flows.run" in out and "handed over: 0" in out
        bad = stage("no_such_stage")
        out = bad.communicate(timeout=60)[0]
        assert bad.returncode == 2 and "invalid choice: 'no_such_stage'" in out and "handed over: 2" in out

        # another environment: declined, and said why
        out = stage("--help", JUDGEAUDIT_SOMETHING_ELSE="1").communicate(timeout=60)[0]
        assert "declined: another environment (JUDGEAUDIT_SOMETHING_ELSE)" in out and "ran here" in out

        # a real stage on the pool of two, forked from the warm process's fork server: SIGTERM to
        # its caller reaches it (the caller ends as the stage does); SIGKILL to the caller ends it
        # too; either way its workers end with it
        servers = _children(warm)  # the fork server (and resource tracker) it started, before any stage
        for sig, status in ((signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGKILL, -signal.SIGKILL)):
            log = tmp_path / f"stage-{sig.name}.log"
            with log.open("w") as f:
                run = subprocess.Popen([sys.executable, "-c", _CALLER, "bootstrap", "--params", str(params),
                                        "--root", str(tmp_path / f"data-{sig.name}")],
                                       cwd=repo, env=env, stdout=f, stderr=subprocess.STDOUT)
            child = _wait_for(lambda: _children(warm) - servers, 60, "stage forked")
            assert len(child) == 1
            child = child.pop()
            workers = _wait_for(lambda: set().union(*map(_children, servers)), 120, "pool worker")
            run.send_signal(sig)
            run.wait(timeout=60)
            assert run.returncode == status, log.read_text()[-3000:]
            assert gone(child, within_s=30), f"stage {child} outlived its caller ({sig.name})"
            assert all(gone(w, within_s=30) for w in workers), f"workers {workers} outlived their stage"

        # an edited source: declined, and the warm process ends
        (repo / "flows" / "stage" / "report.py").write_text((repo / "flows" / "stage" / "report.py").read_text() + "\n")
        out = stage("--help").communicate(timeout=60)[0]
        assert "flows/stage/report.py was edited after it started" in out and "ran here" in out
        assert gone(warm, within_s=30) and not mine.exists()
    finally:
        if running(warm):
            os.kill(warm, signal.SIGTERM)
