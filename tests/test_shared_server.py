"""The stages of one `dvc repro` share one Prefect server: the first stage starts it, the
next ones find it, and it stops once DVC has exited, however DVC ended (a real `dvc repro`
of two stages, each a real flow run, in a temporary git repository)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, gone, running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shared server watches DVC through /proc (Linux)")

_STAGE = """
import json, os, sys, time
from flows.server import run_api

with run_api() as url:
    from prefect import flow
    from prefect.settings import get_current_settings

    @flow
    def stage():
        return get_current_settings().flows.heartbeat_frequency

    beat = stage()
    server = [p for p in os.listdir(sys.argv[2]) if p.endswith(".json")]
    record = json.loads(open(os.path.join(sys.argv[2], server[0])).read()) if server else None
json.dump({"url": url, "heartbeat": beat, "record": record}, open(sys.argv[1], "w"))
time.sleep(float(sys.argv[3]))
"""

_DVC_YAML = """
stages:
  one:
    cmd: {python} stage.py one.json {records} 0
    outs: [one.json]
  two:
    cmd: {python} stage.py two.json {records} {linger}
    deps: [one.json]
    outs: [two.json]
"""


def _repo(tmp_path: Path, linger: float) -> tuple[Path, dict, Path]:
    repo, tmp = tmp_path / "repo", tmp_path / "tmp"
    repo.mkdir()
    tmp.mkdir()
    records = tmp / f"judgeaudit-prefect-{os.getuid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "DVC_STAGE", "DVC_ROOT")}
    env.update(PATH=str(Path(sys.executable).parent) + ":" + env["PATH"], TMPDIR=str(tmp),
               PYTHONPATH=str(ROOT), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    (repo / "stage.py").write_text(_STAGE)
    (repo / "dvc.yaml").write_text(_DVC_YAML.format(python=sys.executable, records=records, linger=linger))
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True, timeout=120)
    return repo, env, records


def test_the_stages_of_a_dvc_run_share_one_server_that_stops_with_dvc(tmp_path):
    repo, env, records = _repo(tmp_path, linger=0)
    out = subprocess.run(["dvc", "repro"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    one, two = (json.loads((repo / f"{name}.json").read_text()) for name in ("one", "two"))
    assert one["url"] == two["url"] and one["record"]["url"] == one["url"]
    assert one["record"]["pid"] == two["record"]["pid"]  # one server process for both stages
    assert (out.stdout + out.stderr).count("the Prefect server this DVC run's stages share") == 2
    assert one["heartbeat"] is None and two["heartbeat"] is None  # it dies with the run: nothing to watch
    assert gone(one["record"]["pid"]), "the shared server outlived `dvc repro`"
    deadline = time.monotonic() + 10
    while list(records.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(records.glob("*.json")) == [], "the stopped server left its record"


_LINGERING_STAGE = """
import json, os, sys, time
from flows.server import exit_on_sigterm, run_api

linger = float(sys.argv[3])
exit_on_sigterm()  # as `python -m flows.run` does
with run_api() as url:
    if linger:
        json.dump({"pid": os.getpid()}, open(sys.argv[1] + ".pid", "w"))
        try:
            time.sleep(linger)  # a long stage
        finally:
            time.sleep(600)  # a cleanup that hangs, as Prefect's crash report to a server that has stopped did
json.dump({}, open(sys.argv[1], "w"))
"""

_STAGE_IN_A_FLOW = """
import json, os, sys, time
from flows.server import exit_on_sigterm, run_api

exit_on_sigterm()  # as `python -m flows.run` does
with run_api() as url:
    from prefect import flow

    @flow
    def stage():
        if float(sys.argv[3]):
            json.dump({"pid": os.getpid()}, open(sys.argv[1] + ".pid", "w"))
            time.sleep(float(sys.argv[3]))  # a long stage: SIGTERM meets Prefect's handler, not ours

    stage()
json.dump({}, open(sys.argv[1], "w"))
"""


@contextlib.contextmanager
def _dvc_repro_until(repo: Path, env: dict, marker: str) -> Iterator[tuple[subprocess.Popen, dict]]:
    """`dvc repro` in ``repo``, once its stage has written ``marker`` (JSON, yielded with the
    process); on the way out the process group is killed (an orphaned stage that still sleeps)."""
    proc = subprocess.Popen(["dvc", "repro"], cwd=repo, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (repo / marker).exists():
            assert proc.poll() is None and time.monotonic() < deadline, f"dvc repro never wrote {marker}"
            time.sleep(0.2)
        time.sleep(0.5)
        yield proc, json.loads((repo / marker).read_text())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize(("stage_code", "own_server"), [(_LINGERING_STAGE, False), (_STAGE_IN_A_FLOW, False),
                                                       (_LINGERING_STAGE, True)],
                         ids=["shared-server", "shared-server-in-a-flow", "user-PREFECT_API_URL"])
def test_a_stage_ends_with_its_killed_dvc_run(tmp_path, stage_code, own_server):
    """A `dvc repro` killed mid-stage takes the stage with it: it gets SIGTERM, and a cleanup that
    hangs is cut short after the grace (before, the stage ran on for minutes, then hung).
    - in a flow: Prefect's SIGTERM handler replaces ours while a flow runs, and its crash report
      to the shared server, which stopped with DVC, was retried for minutes;
    - where the user's PREFECT_API_URL names the server (before, no one watched DVC then): this
      stage never calls it, so an address nothing listens on stands in for it."""
    from flows.server import EXIT_GRACE_S, free_port

    repo, env, records = _repo(tmp_path, linger=600)
    if own_server:
        env["PREFECT_API_URL"] = f"http://127.0.0.1:{free_port()}/api"
    (repo / "stage.py").write_text(stage_code)
    with _dvc_repro_until(repo, env, "two.json.pid") as (proc, info):
        stage = info["pid"]
        assert running(stage)
        proc.send_signal(signal.SIGKILL)
        if stage_code is _STAGE_IN_A_FLOW:  # the server gone first, as in the relock that found this
            server = json.loads(next(records.glob("*.json")).read_text())["pid"]
            os.kill(server, signal.SIGKILL)
        proc.wait(timeout=60)
        killed = time.monotonic()
        assert gone(stage, within_s=EXIT_GRACE_S + 20), "the stage outlived its killed `dvc repro`"
        if stage_code is _LINGERING_STAGE:
            assert time.monotonic() - killed > EXIT_GRACE_S - 1  # it waited for its cleanup, within the grace


def test_the_shared_server_stops_when_dvc_is_killed(tmp_path):
    repo, env, _ = _repo(tmp_path, linger=600)  # the second stage waits after its flow
    with _dvc_repro_until(repo, env, "two.json") as (proc, info):
        server = info["record"]["pid"]
        assert running(server)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert gone(server), "the shared server outlived the killed `dvc repro`"


def test_a_record_names_its_process_while_it_runs_and_records_of_ended_runs_are_swept(tmp_path):
    from flows.server import _stat, drop_record, locked, running_record

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended_owner = (ended.pid, _stat(ended.pid)[2])
    ended.wait()
    me = (os.getpid(), _stat(os.getpid())[2])
    mine, stale = (tmp_path / f"{pid}-{start}.json" for pid, start in (me, ended_owner))
    for record, owner in ((mine, me), (stale, ended_owner)):
        record.write_text(json.dumps({"pid": owner[0], "start": owner[1], "url": "u"}))
        for suffix in (".log", ".sock"):
            record.with_suffix(suffix).write_text("")
    reused = tmp_path / "reused.json"  # a record whose pid now belongs to a newer process: not running
    reused.write_text(json.dumps({"pid": me[0], "start": me[1] - 1}))
    with locked(tmp_path):
        assert running_record(mine)["url"] == "u"
        assert stale.exists()  # a running record sweeps nothing
        assert running_record(reused) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["lock", "reused.json", *(mine.with_suffix(s).name for s in (".json", ".log", ".sock"))])
    drop_record(mine, keep_log=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["lock", mine.with_suffix(".log").name, "reused.json"])
