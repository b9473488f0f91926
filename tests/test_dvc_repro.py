"""A real `dvc repro` in a temporary git repository: everything runs, a second repro
does nothing, a judge parameter change reruns only judging and what follows, and an edit
to the length-controlled GLM makes `dvc status` flag the stage that runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, tiny_params

pytestmark = pytest.mark.slow


def _sh(*args: str, cwd: Path, **extra: str) -> str:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + ":" + os.environ["PATH"], **extra}
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def _ran(log: str) -> set[str]:
    return set(re.findall(r"Running stage '(\w+)'", log))


def test_dvc_repro(prefect_server, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for item in ("dvc.yaml", "judgeaudit", "flows", "tasks"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / item)
    (repo / "params.yaml").write_text(yaml.safe_dump(tiny_params(), sort_keys=False))
    _sh("git", "init", "-q", cwd=repo)
    _sh("dvc", "init", "-q", cwd=repo)

    trace = tmp_path / "params-read.jsonl"
    first = _sh("dvc", "repro", cwd=repo, JUDGEAUDIT_TRACE_PARAMS=str(trace))
    assert _ran(first) == {"bootstrap", "generate", "train", "respond", "judge", "audit",
                            "robustness", "leakage_studies", "boat", "pu", "prefix", "score_range", "real_judges", "leaderboard",
                            "report"}
    assert (repo / "data/report/report.html").exists()
    # every params section a stage read is among its dvc.yaml params (and so in its tasks'
    # cache keys): none can change without DVC rerunning the stage; `scale` only says how
    # the work is spread over processes
    declared = {name: {p.split(".")[0] for p in stage.get("params", [])}
                for name, stage in yaml.safe_load((repo / "dvc.yaml").read_text())["stages"].items()}
    reads = {}
    for line in trace.read_text().splitlines():
        rec = json.loads(line)
        if rec["argv"][:1] == ["run"]:
            reads[rec["argv"][1]] = set(rec["sections"])
    assert set(reads) == set(declared)
    undeclared = {name: sorted(read - declared[name] - {"scale"}) for name, read in reads.items()}
    assert not any(undeclared.values()), undeclared
    assert reads["boat"] >= {"judge", "leakage"}  # the probe asks the roster's judges
    lock = (repo / "dvc.lock").read_text()

    second = _sh("dvc", "repro", cwd=repo)
    assert _ran(second) == set()
    assert (repo / "dvc.lock").read_text() == lock

    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["judge"]["normalise"] = "sum"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    third = _sh("dvc", "repro", cwd=repo)
    assert "judge" in _ran(third)
    # judging and what follows: the stages that use the judges (pu, and boat's probe) too
    assert _ran(third) <= {"judge", "audit", "robustness", "leakage_studies", "boat", "pu", "report"}
    assert not _ran(third) & {"bootstrap", "generate", "train", "respond"}

    glm = repo / "judgeaudit" / "audits" / "length_control.py"
    glm.write_text(glm.read_text() + "\n# an edit\n")
    status = _sh("dvc", "status", cwd=repo)
    flagged = set(re.findall(r"^(\w+):", status, flags=re.M))
    assert "robustness" in flagged and not flagged & {"bootstrap", "generate", "train", "respond", "judge"}
