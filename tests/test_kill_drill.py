"""Drill: `judgeaudit run` killed (SIGKILL) at a seeded random point leaves no process
behind (its fork server and workers die with it), and the rerun removes the leftovers of
the interrupted writes and gives the same tables and models as a run that was never
interrupted. SIGTERM, and SIGKILL with the pool busy: tests/test_kill_drill_pool.py."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, gone, parent

pytestmark = pytest.mark.slow


def path_digest(path: Path) -> str:
    """Content hash of a file, or of every file under a directory."""
    import hashlib

    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path) if f != path else f.name).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # as `dvc repro` runs it
    return {**env, "PREFECT_HOME": str(tmp_path / "prefect-home")}


def _foreground_sigint() -> None:
    """SIGINT as a terminal's foreground job has it. A shell starts background jobs (CI under
    nohup, `pytest &`) with SIGINT ignored, exec keeps that, and Python then installs no
    KeyboardInterrupt handler: a drill of Ctrl-C would test the shell, not the run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(params: Path, root: Path, env: dict, own_group: bool = False) -> subprocess.Popen:
    """``judgeaudit run bootstrap``; ``own_group``: in a process group of its own, as a
    terminal's foreground job is (Ctrl-C reaches the whole group)."""
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "bootstrap", "--params", str(params),
                             "--root", str(root)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=own_group,
                            preexec_fn=_foreground_sigint)


def _assert_bootstrap_equal(clean: Path, root: Path) -> None:
    """The prompt table and every model under ``root`` equal an uninterrupted run's (``clean``)."""
    pd.testing.assert_frame_equal(pd.read_parquet(clean / "prompts" / "prompts.parquet"),
                                  pd.read_parquet(root / "prompts" / "prompts.parquet"))
    for model in sorted(p.name for p in (clean / "models").iterdir()):
        assert path_digest(clean / "models" / model) == path_digest(root / "models" / model), model


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            if parent(int(entry.name)) == pid:
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(pid: int) -> list[int]:
    """Its children and theirs: the pool's workers are the fork server's children on Linux."""
    found = _children(pid)
    return found + [g for c in found for g in _descendants(c)]


def _workers(pid: int) -> list[int]:
    """The run's pool workers: forked by its fork server (judgeaudit.workers.fork_server), or
    spawned by the run itself where there is none."""
    found = []
    for child in _children(pid):
        if b"spawn_main" in _cmdline(child):
            found.append(child)
        elif b"forkserver" in _cmdline(child):
            found += _children(child)
    return found


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]


def _start_and_find_fork_server(params: Path, root: Path, env: dict) -> tuple[subprocess.Popen, int]:
    """The run, and the fork server its pool's workers come from."""
    proc = _run(params, root, env)
    deadline = time.monotonic() + 240
    while not (server := [c for c in _children(proc.pid) if b"forkserver" in _cmdline(c)]):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never started its fork server"
        time.sleep(0.1)
    return proc, server[0]


def test_a_killed_run_leaves_nothing_and_the_rerun_matches(tmp_path, pooled_params_file, tiny_audit):
    env = _env(tmp_path)
    _, clean = tiny_audit  # a run never interrupted: the session's run of the same config (tests/conftest.py)
    killed = tmp_path / "killed"

    proc, server = _start_and_find_fork_server(pooled_params_file, killed, env)
    time.sleep(random.Random(7).uniform(2.0, 12.0))  # a seeded random point: model building, usually
    started = _descendants(proc.pid)  # the fork server, the pool's workers once they are up
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert gone(server), "the fork server outlived the killed run"
    assert [pid for pid in started if not gone(pid)] == [], "a process the killed run started outlived it"
    # what a write killed half-way leaves, whether or not this kill happened to leave it
    (killed / "models" / ".gen-f.k1ll3d00").mkdir(parents=True, exist_ok=True)
    (killed / "models" / ".gen-f.k1ll3d00" / "model.safetensors").write_bytes(b"half")

    assert _run(pooled_params_file, killed, env).wait(timeout=600) == 0
    assert _leftovers(killed) == []
    _assert_bootstrap_equal(clean, killed)


def test_a_run_stopped_by_ctrl_c_reruns_to_the_same_tables(tmp_path, pooled_params_file, tiny_audit):
    """Ctrl-C to the process group mid-stage, then the same command again: the tables equal
    an uninterrupted run's (the session's run of the same config), and nothing half-written
    is left."""
    env = _env(tmp_path)
    _, clean = tiny_audit
    root = tmp_path / "stopped"
    proc = _run(pooled_params_file, root, env, own_group=True)
    deadline = time.monotonic() + 240
    while not (root / "models").exists() or not any((root / "models").iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never started writing models"
        time.sleep(0.1)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert _run(pooled_params_file, root, env).wait(timeout=600) == 0
    assert _leftovers(root) == []
    _assert_bootstrap_equal(clean, root)


def test_remove_leftovers_takes_only_scratch_names(tmp_path):
    from judgeaudit.tables import remove_leftovers, write_json, write_table

    write_table(pd.DataFrame({"a": [1]}), tmp_path / "t" / "x.parquet")
    write_json({"a": 1}, tmp_path / "t" / "s.json")
    keep = [tmp_path / "t" / ".gitignore", tmp_path / "t" / "x.parquet", tmp_path / "t" / "s.json"]
    keep[0].write_text("/x\n")
    scratch = [tmp_path / "t" / ".m.a1b2c3d4", tmp_path / "t" / ".x.parquet.a1b2c3d4.tmp"]  # no writer named
    scratch[0].mkdir()
    scratch[1].write_bytes(b"half")
    assert sorted(remove_leftovers(tmp_path)) == sorted(scratch)
    assert all(p.exists() for p in keep) and not any(p.exists() for p in scratch)


def test_leftovers_of_a_live_writer_are_kept(tmp_path):
    """A run removes the scratch of writers that are gone, never what another live run on
    the same data root is writing (a stage started beside another)."""
    import subprocess
    import sys

    from judgeaudit.tables import atomic_dir, remove_leftovers

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        root = tmp_path / "data"
        dead_dir = root / "m" / f".rm.{ended.pid}-a1b2c3d4"
        live_dir = root / "m" / f".rm.{live.pid}-e5f6g7h8"
        live_file = root / "t" / f".x.parquet.{live.pid}-a1b2c3d4.tmp"
        for folder in (dead_dir, live_dir):
            folder.mkdir(parents=True)
        live_file.parent.mkdir(parents=True)
        live_file.write_bytes(b"being written")
        assert remove_leftovers(root) == [dead_dir]
        assert live_dir.exists() and live_file.exists()
        with atomic_dir(root / "m" / "rm") as scratch:  # another write of the same folder: not clobbered
            (scratch / "w").write_text("1")
        assert live_dir.exists() and (root / "m" / "rm" / "w").exists()
    finally:
        live.kill()
        live.wait()
    assert sorted(remove_leftovers(root)) == sorted([live_dir, live_file])  # its writer is gone now
    assert not live_dir.exists() and not live_file.exists()
