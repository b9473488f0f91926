"""Drills of what a run does to its surroundings: the modes of what it writes (a shared data
folder needs the umask's modes, not tempfile's private 0600/0700), two runs at once on an
empty Prefect home, and a PREFECT_API_URL where no server answers."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from judgeaudit.tables import atomic_dir, write_json, write_table
from tests.conftest import ROOT
from tests.tiny import write_tiny_params


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_outputs_and_model_folders_follow_the_umask(tmp_path, umask_022):
    """A normal write under umask 022 gives 0644 files and 0755 folders: so must the atomic
    writes (they gave 0600 and 0700, which other users of a shared data folder cannot read)."""
    table = write_table(pd.DataFrame({"a": [1]}), tmp_path / "t" / "table.parquet")
    summary = write_json({"a": 1}, tmp_path / "summary.json")
    with atomic_dir(tmp_path / "models" / "m") as tmp:
        (tmp / "config.json").write_text("{}")
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert _mode(plain) == 0o644
    assert (_mode(table), _mode(summary), _mode(tmp_path / "models" / "m")) == (0o644, 0o644, 0o755)
    os.umask(0o077)  # a private umask stays private
    assert _mode(write_table(pd.DataFrame({"a": [1]}), tmp_path / "private.parquet")) == 0o600
    with atomic_dir(tmp_path / "models" / "p"):
        pass
    assert _mode(tmp_path / "models" / "p") == 0o700


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_two_runs_at_once_on_an_empty_prefect_home(tmp_path):
    """Two stages started together with an empty PREFECT_HOME and no server: both finish, and
    neither touches the Prefect home (a temporary Prefect server per run used to migrate one
    SQLite database from both, and one died: "duplicate column name: has_data")."""
    params = write_tiny_params(tmp_path / "params.yaml")
    home = tmp_path / "prefect-home"
    home.mkdir()
    runs = [subprocess.Popen([sys.executable, "-m", "flows.run", "bootstrap", "--params", str(params),
                              "--root", str(tmp_path / f"data{k}")], cwd=ROOT, env=_env(PREFECT_HOME=str(home)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for k in (1, 2)]
    outputs = [r.communicate(timeout=600)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outputs
    assert not any("has_data" in out or "Traceback" in out for out in outputs), outputs
    assert list(home.iterdir()) == []  # nothing started a Prefect server or opened its database
    for k in (1, 2):
        assert (tmp_path / f"data{k}" / "prompts" / "prompts.parquet").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("url", ["http://127.0.0.1:{free_port}/api", "http://no-such-host.invalid:4200/api"],
                         ids=["refused-port", "unknown-host"])
def test_an_unreachable_prefect_api_url_is_one_line_and_quick(tmp_path, url):
    # the port is drawn when the test runs: ids drawn at collection differ between xdist workers
    url = url.format(free_port=_free_port())
    params = write_tiny_params(tmp_path / "params.yaml")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", "bootstrap", "--params", str(params),
                           "--root", str(tmp_path / "data")], cwd=ROOT, capture_output=True, text=True,
                          env=_env(PREFECT_API_URL=url, PREFECT_HOME=str(tmp_path / "home")), timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "no Prefect server answers" in lines[0], done.stderr
    assert took < 8, took  # the imports and one refused connection; the flow run's client retried for 9 s
    assert not (tmp_path / "data").exists()


def test_no_command_loads_prefect_without_a_server():
    """Without PREFECT_API_URL nothing imports Prefect (whose flows would start a temporary
    server on the Prefect home's SQLite database, the race above)."""
    code = ("import sys, flows.cli, flows.run\nflows.cli._parser()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'prefect'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_small_runs_data_root_is_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("data-small/prompts/prompts.parquet", "data-small-gpu/metrics/pls.parquet", "pu_audit/x.json",
                 "data/quarantine/pls--audit--1.parquet"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert done.returncode == 0, f"{path} is not ignored"
