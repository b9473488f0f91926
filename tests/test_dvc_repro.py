"""A real `dvc repro` in a temporary git repository: everything runs and gives the same
tables, bit for bit, as the Prefect flow run of the same config in another folder (that
one on a pool of two worker processes, this one on one process), a second repro does
nothing, a judge parameter sweep with `dvc exp run -S` reruns only judging and what
follows and `dvc exp show` compares its metrics with the baseline's, and an edit to the
length-controlled GLM makes `dvc status` flag the stage that runs it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import TINY_TABLES
from tests.tiny import tiny_repo

pytestmark = pytest.mark.slow


_GIT_ID = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "judgeaudit tests"), ("EMAIL", "tests@judgeaudit.invalid"))}


class _Run:
    """A command run in the background, its output in files, not pipes: a run left alone
    while the test does other work must not fill a pipe and stall."""

    def __init__(self, *args: str, cwd: Path, **extra: str) -> None:
        bindir = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": bindir + ":" + os.environ["PATH"], **_GIT_ID, **extra}
        self.out, self.err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=self.out, stderr=self.err,
                                     start_new_session=True)

    def kill(self) -> None:
        """Kill what is left of the command and the stages it started (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def finish(self, stdout_only: bool = False) -> str:
        try:
            self.proc.wait(timeout=1800)
        finally:
            self.kill()  # nothing left running after a timeout or an interrupt
        texts = []
        for f in (self.out, self.err):
            with f:
                f.seek(0)
                texts.append(f.read())
        stdout, stderr = texts
        command = " ".join(self.proc.args)
        assert self.proc.returncode == 0, f"{command} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}"
        return stdout if stdout_only else stdout + stderr


def _sh(*args: str, cwd: Path, stdout_only: bool = False, **extra: str) -> str:
    return _Run(*args, cwd=cwd, **extra).finish(stdout_only)


def _exp_rows(shown: list[dict]) -> dict[str, dict]:
    """`dvc exp show --json`: the baseline commit's and each named experiment's data."""
    rows = {}
    for entry in shown:
        if entry.get("rev") != "workspace":
            rows["baseline"] = entry["data"]
        for exp in entry.get("experiments") or []:
            for rev in exp.get("revs", []):
                rows[rev["name"]] = rev["data"]
    return rows


def _ran(log: str) -> set[str]:
    return set(re.findall(r"Running stage '(\w+)'", log))


def test_dvc_repro(prefect_server, request, tmp_path):
    # the flow run's config (tiny_audit), on one process where the flow runs a pool of two:
    # `scale` is not among any stage's params (DVC would not rerun a stage for it), so it
    # must not change a bit of the tables
    repo = tiny_repo(tmp_path / "repo", processes=1)
    _sh("dvc", "init", "-q", cwd=repo)

    # as a user's shell runs it: no Prefect server named, so no stage starts or needs one;
    # each stage is handed only the params its declaration names (a read of any other fails it)
    storage = {"PREFECT_API_URL": ""}
    repro = _Run("dvc", "repro", cwd=repo, **storage)
    # meanwhile the Prefect flow runs the same config (the session's fixture, if no test has yet):
    # DVC's one process per stage leaves a core to the flow's pool
    try:
        params, flow_root = request.getfixturevalue("tiny_audit")
    except BaseException:
        repro.kill()
        raise
    config, ours = (yaml.safe_load(p.read_text()) for p in (params, repo / "params.yaml"))
    assert config.pop("scale") == {"processes": 2} and ours.pop("scale") == {"processes": 1}
    assert config == ours
    first = repro.finish()
    assert _ran(first) == {"bootstrap", "generate", "train", "respond", "judge", "audit",
                            "robustness", "leakage_studies", "boat", "pu", "prefix", "score_range", "real_judges", "leaderboard",
                            "live_judge", "report"}
    assert (repo / "data/report/report.html").exists()
    # exact reproduction: `dvc repro` in another folder gives the flow run's tables, to the bit
    for table in TINY_TABLES:
        pd.testing.assert_frame_equal(pd.read_parquet(repo / "data" / table), pd.read_parquet(flow_root / table),
                                      check_exact=True, obj=table)
    lock = (repo / "dvc.lock").read_text()

    second = _sh("dvc", "repro", cwd=repo, **storage)
    assert _ran(second) == set()
    assert (repo / "dvc.lock").read_text() == lock

    (repo / ".gitignore").write_text("__pycache__/\n")
    _sh("git", "add", "-A", cwd=repo)
    _sh("git", "commit", "-qm", "the tiny default, reproduced", cwd=repo)
    third = _sh("dvc", "exp", "run", "-n", "normalise-sum", "-S", "judge.normalise=sum", cwd=repo, **storage)
    assert "judge" in _ran(third)
    # judging and what follows: the stages that use the judges (pu, boat's probe, the live judge's
    # verdict settings) too
    assert _ran(third) <= {"judge", "audit", "robustness", "leakage_studies", "boat", "pu", "live_judge", "report"}
    assert not _ran(third) & {"bootstrap", "generate", "train", "respond"}
    rows = _exp_rows(json.loads(_sh("dvc", "exp", "show", "--json", cwd=repo, stdout_only=True)))
    assert set(rows) >= {"baseline", "normalise-sum"}
    normalise = {name: row["params"]["params.yaml"]["data"]["judge"]["normalise"] for name, row in rows.items()}
    assert normalise["normalise-sum"] == "sum" and normalise["baseline"] != "sum"
    metrics = {name: row["metrics"]["data/metrics/summary.json"]["data"] for name, row in rows.items()}
    assert metrics["baseline"] != metrics["normalise-sum"]  # the sweep's effect, compared with no code of ours
    # and in the stages whose summaries keep their rows in lists, which DVC reads through the
    # report stage's data/figures.json only
    intervals = {name: row["metrics"]["data/figures.json"]["data"] for name, row in rows.items()}
    assert intervals["baseline"]["robustness"] != intervals["normalise-sum"]["robustness"]
    diff = _sh("dvc", "metrics", "diff", "--json", cwd=repo, stdout_only=True)
    assert "data/metrics/summary.json" in json.loads(diff)  # workspace (the experiment) vs HEAD
    # dvc.yaml's data plots: the experiment's PLS bars over the baseline's, from the same file
    plots = json.loads(_sh("dvc", "plots", "diff", "HEAD", "--json", cwd=repo, stdout_only=True))["data"]
    bars = plots["data/report/plots/pls_by_tier.json"][0]["content"]["data"]["values"]
    cells = {rev: sorted(bar["cell"] for bar in bars if bar["rev"] == rev) for rev in ("HEAD", "workspace")}
    assert {bar["rev"] for bar in bars} == set(cells) and cells["HEAD"] == cells["workspace"]
    assert "same / SFT" in cells["HEAD"] and all(bar["n"] > 0 for bar in bars)  # one bar per tier and method

    glm = repo / "judgeaudit" / "audits" / "length_control.py"
    glm.write_text(glm.read_text() + "\n# an edit\n")
    status = _sh("dvc", "status", cwd=repo)
    flagged = set(re.findall(r"^(\w+):", status, flags=re.M))
    assert "robustness" in flagged and not flagged & {"bootstrap", "generate", "train", "respond", "judge"}
