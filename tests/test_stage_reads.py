"""What each stage really reads, against what dvc.yaml says it reads: the tiny `dvc repro`
under strace, every file a stage's processes (its workers included) open for reading under
data/ attributed to the stage, and each must be among the stage's deps or its own outs. A
file read but not declared leaves `dvc status` saying "up to date" over a stale stage: the
respond stage read the base model of its in-context students (data/models) undeclared, so a
config with only ICL students kept the old base's answers after an edit to bootstrap's own code
(its corpus, say) rebuilt the base."""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.tiny import tiny_repo


def _can_trace() -> bool:
    """strace is installed and may trace here (a container can forbid ptrace)."""
    if shutil.which("strace") is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(["strace", "-f", "-o", os.devnull, "true"], capture_output=True, check=False)
    return probe.returncode == 0


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _can_trace(), reason="strace cannot trace here (not installed, not "
                                 "Linux, or ptrace forbidden): the stage-read audit needs it")]

_EXECVE = re.compile(r'execve\("[^"]*", \[(.*?)\]')
_CHILD = re.compile(r'(?:clone3?|vfork|fork)\(.*\)\s+= (\d+)$')
_OPEN = re.compile(r'openat\((?:AT_FDCWD|\d+), "([^"]+)", ([A-Z_|]+)(?:, \w+)?\)\s+= \d+')
_WRITE_OR_DIR = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_DIRECTORY")


def stage_reads(traces: Path, repo: Path, stages: set[str]) -> dict[str, set[str]]:
    """Stage -> the files under ``repo``/data its processes opened read-only (``strace -ff``
    files in ``traces``): a stage's processes are the one that exec'd ``flows.run STAGE``
    and everything it started, threads and their children included."""
    roots, children, opens = {}, collections.defaultdict(set), collections.defaultdict(list)
    for path in traces.iterdir():
        pid = int(path.name.rsplit(".", 1)[1])
        for line in path.read_text(errors="replace").splitlines():
            if (m := _EXECVE.match(line)) and line.endswith("= 0"):
                argv = re.findall(r'"([^"]*)"', m.group(1))
                if "flows.run" in argv and argv[argv.index("flows.run") + 1] in stages:
                    roots[pid] = argv[argv.index("flows.run") + 1]
            elif m := _CHILD.match(line):
                children[pid].add(int(m.group(1)))
            elif (m := _OPEN.match(line)) and not _WRITE_OR_DIR.search(m.group(2)):
                opens[pid].append(m.group(1))
    data, reads = (repo / "data").resolve(), collections.defaultdict(set)
    for root, name in roots.items():
        todo, seen = [root], set()
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                todo += children[pid]
                for opened in opens[pid]:
                    full = (repo / opened).resolve()  # an absolute path stays as it is
                    if data in full.parents:
                        reads[name].add(str(full.relative_to(repo.resolve())))
    return reads


def _covered(path: str, declared: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in declared)


def _paths(entries: list) -> list[str]:
    """dvc.yaml's outs, metrics or plots: a path, or a path with its options."""
    return [e if isinstance(e, str) else next(iter(e)) for e in entries]


def test_every_file_a_stage_reads_is_among_its_deps(tmp_path):
    repo = tiny_repo(tmp_path / "repo", processes=2)  # the workers' reads are the stage's too
    traces = tmp_path / "strace"
    traces.mkdir()
    bindir = str(Path(sys.executable).parent)
    # one process per stage, as a user's shell runs it (no Prefect server named)
    env = {**os.environ, "PATH": bindir + ":" + os.environ["PATH"], "PREFECT_API_URL": ""}
    subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True, env=env)
    strace = ["strace", "-f", "-ff", "--seccomp-bpf", "-e", "trace=execve,openat,clone,clone3,vfork,fork",
              "-o", str(traces / "t")]
    run = subprocess.run([*strace, "dvc", "repro"], cwd=repo, env=env, capture_output=True, check=False,
                         text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    reads = stage_reads(traces, repo, set(stages))
    # the trace sees the stages' own reads, not nothing: each stage after bootstrap that takes
    # tables or models from another reads some, and the models are read where they are judged
    # (live_judge names no judge in the shipped params: it writes an empty summary, reading nothing)
    assert set(reads) >= set(stages) - {"bootstrap", "real_judges", "leaderboard", "live_judge"}, sorted(reads)
    assert any(f.startswith("data/models/") for f in reads["judge"])
    assert any(f.startswith("data/models/student/") for f in reads["respond"])  # its ICL students' base
    undeclared = {}
    for name, files in reads.items():
        spec = stages[name]
        own = _paths(spec.get("outs", []) + spec.get("metrics", []) + spec.get("plots", []))
        undeclared[name] = sorted(f for f in files if not _covered(f, spec.get("deps", []) + own))
    assert not any(undeclared.values()), {k: v[:10] for k, v in undeclared.items() if v}
