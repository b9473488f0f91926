"""Drills for a new user's first mistakes: serving or running a stage before what it
needs exists gives one line that says what to run first, never a hub-id traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flows.cli import main
from tests.conftest import ROOT


def test_serve_before_the_models_are_built(tmp_path, tiny_params_file, capsys):
    code = main(["serve", "gen-f", "--params", str(tiny_params_file), "--root", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "Repo id" not in err and "Traceback" not in err
    assert f"{tmp_path / 'data' / 'models' / 'gen-f'}: model 'gen-f' does not exist" in err
    assert "dvc repro bootstrap" in err


@pytest.mark.parametrize("stage,upstream", [("judge", "respond"), ("respond", "bootstrap"), ("train", "generate"), ("audit", "judge")])
def test_a_stage_before_its_upstream_names_the_stage_to_run_first(tmp_path, tiny_params_file, stage, upstream):
    from flows.stages import STAGES

    with pytest.raises(FileNotFoundError, match=rf"the '{upstream}' stage writes it: run `dvc repro {upstream}`"):
        STAGES[stage].fn(str(tiny_params_file), str(tmp_path / "data"))


def test_run_says_which_stage_to_run_first_before_any_server(tmp_path, tiny_params_file, capsys):
    code = main(["run", "judge", "--params", str(tiny_params_file), "--root", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "Prefect server" not in err
    assert "no responses table" in err and "run `dvc repro respond`" in err


_THREAD_SEES = """
import os, sys, threading
os.environ.pop("PREFECT_API_URL", None)
from flows.server import reserve_api_url
if sys.argv[1] == "late":
    import prefect  # Prefect's process-wide settings built before the URL is known
url = reserve_api_url()
import prefect
from prefect.settings import PREFECT_API_URL
seen = []
threading.Thread(target=lambda: seen.append(PREFECT_API_URL.value())).start()
import time; time.sleep(0.5)
print(seen[0] == url)
"""


def test_threads_of_a_run_see_its_server():
    """The URL of a run's temporary server is in the environment before Prefect is
    imported, so a thread of the run (a process pool's result collector) reports to it
    instead of starting a server of its own; reserved after the import, a thread misses it."""
    def run(when: str) -> str:
        out = subprocess.run([sys.executable, "-c", _THREAD_SEES, when], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run("early") == "True"
    assert run("late") == "False"


_HEARTBEAT = """
import os
os.environ.pop("PREFECT_API_URL", None)
from prefect import flow
from prefect.settings import get_current_settings
from flows.server import prefect_api

@flow
def beat():
    return get_current_settings().flows.heartbeat_frequency

print("outside:", get_current_settings().flows.heartbeat_frequency)
with prefect_api():
    print("temporary server:", beat())
"""


def test_flows_on_the_temporary_server_send_no_heartbeats():
    """A flow on the run's own temporary server sends no heartbeats (that server dies with
    the run, so nothing is left to watch for crashed runs; each flow's exit waited up to a
    second on the heartbeat thread); Prefect's default stays for a server of the user's."""
    out = subprocess.run([sys.executable, "-c", _HEARTBEAT], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert lines["temporary server"] == "None" and lines["outside"] not in ("None", "")
