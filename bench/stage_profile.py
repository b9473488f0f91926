"""Where each stage's time goes, by kind of work: stages of a checkout that holds their
inputs rerun one by one under py-spy (their worker processes too), each stage's samples
sorted into training, text generation, tokenizing, forward passes that score or embed,
statistics, plots and reports, table validation, imports and the rest (Prefect, waiting).
bench/default_run.py says how long each stage takes; this says what it spends it on, which
is what a cut must aim at.

Each stage reruns in place, as `dvc repro` runs it (its own process, no Prefect server);
on the machine that wrote them it rewrites the same bits (`dvc status` stays up to date).
A stage imports torch and transformers in its own process and its fork server's; a
process of an older layout's Prefect server, if one shows, is left out. py-spy samples Python
threads: a sample is a thread seen busy, so a torch call on two threads counts once; the
shares compare kinds of work, not cores. py-spy is not a dependency of judgeaudit:
`pip install py-spy`.

    python bench/default_run.py --keep                      # a checkout with every stage's inputs
    python bench/stage_profile.py --repo ../judgeaudit-default-run-NNNN
    python bench/stage_profile.py --repo ../judgeaudit-default-run-NNNN --stages boat pu --rate 50
    python bench/stage_profile.py --from-samples DIR        # the table again, from a run's samples
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_run import ROOT, result_storage

# (kind, frames that mark it): a sample goes to the first kind one of whose marks is in its
# stack, so the order matters (a forward pass reached from an audit is a forward pass)
KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("imports", ("_find_and_load (",)),  # first: importing trl inside the trainers is not training
    ("training", ("judgeaudit/training/trainers.py",)),
    ("generation", ("TransformersModel.generate (",)),
    ("tokenizing", ("PreTrainedTokenizerBase.__call__ (", "TokenizersBackend._encode_plus (")),
    ("forward passes", ("TransformersModel._tail_logits (", "Encoder.embed (", "RewardScorer.rewards (")),
    ("statistics", ("judgeaudit/audits/",)),
    ("plots, reports", ("judgeaudit/report/",)),
    ("validation", ("judgeaudit/schemas/",)),
]
OTHER = "the rest"
# samples of a Prefect server process (older layouts started one per cold stage) are left out
SERVER = "-m flows.server"


def stage_names() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from judgeaudit.runner.registry import stages

    return [s.name for s in stages()]


def _in_server(stack: str) -> bool:
    """Whether a stack (its process frames first, with --subprocesses) is the server's."""
    for frame in stack.split(";"):
        if not frame.startswith("process "):
            return False
        if SERVER in frame:
            return True
    return False


def classify(samples: Path) -> collections.Counter:
    """{kind: samples} of one py-spy raw file (a folded stack and its count per line)."""
    counts: collections.Counter = collections.Counter()
    for line in samples.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit() or _in_server(stack):
            continue
        kind = next((k for k, marks in KINDS if any(m in stack for m in marks)), OTHER)
        counts[kind] += int(n)
    return counts


def profile_stage(py_spy: str, repo: Path, stage: str, out: Path, rate: int) -> tuple[float, int]:
    """(wall seconds, exit status) of ``python -m flows.run STAGE`` in ``repo`` under py-spy,
    its samples written to ``out``."""
    with result_storage() as storage:
        env = {**os.environ, **storage, "PREFECT_API_URL": "", "PYTHONPATH": str(repo)}
        started = time.monotonic()
        proc = subprocess.run([py_spy, "record", "--subprocesses", "--rate", str(rate), "--format", "raw",
                               "-o", str(out), "--", sys.executable, "-m", "flows.run", stage],
                              cwd=repo, env=env, text=True, capture_output=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    return time.monotonic() - started, proc.returncode


def _row(label: str, wall: str, counts: collections.Counter, rate: int, bold: bool = False) -> str:
    n, mark = sum(counts.values()) or 1, "**" if bold else ""
    shares = " | ".join(f"{mark}{100 * counts[k] / n:.0f}%{mark}" for k in [*(k for k, _ in KINDS), OTHER])
    return f"| {label} | {wall} | {sum(counts.values()) / rate:.0f} | {shares} |"


def table(rows: list[tuple[str, float | None, collections.Counter]], rate: int) -> str:
    """Markdown: per stage its wall seconds, the thread-seconds sampled and each kind's share;
    then all the stages together."""
    kinds = [k for k, _ in KINDS] + [OTHER]
    lines = ["| stage | wall s | thread-s sampled | " + " | ".join(kinds) + " |",
             "| --- | --- | --- |" + " --- |" * len(kinds)]
    lines += [_row(stage, "" if wall is None else f"{wall:.0f}", counts, rate) for stage, wall, counts in rows]
    walls = [wall for _, wall, _ in rows if wall is not None]
    total = sum((counts for _, _, counts in rows), collections.Counter())
    lines.append(_row("**all**", f"{sum(walls):.0f}" if walls else "", total, rate, bold=True))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="a checkout whose data/ holds every profiled stage's inputs "
                                              "(python bench/default_run.py --keep makes one)")
    ap.add_argument("--stages", nargs="+", help="these stages only (default: every stage, in DAG order)")
    ap.add_argument("--rate", type=int, default=40, help="samples per second (default 40)")
    ap.add_argument("--samples", type=Path, help="where py-spy's raw samples go, one file per stage "
                                                 "(default: a folder beside the repo)")
    ap.add_argument("--from-samples", type=Path, help="print the table from an earlier run's samples instead")
    args = ap.parse_args()
    stages = args.stages or stage_names()
    if args.from_samples:
        rows = [(s, None, classify(args.from_samples / f"{s}.txt")) for s in stages
                if (args.from_samples / f"{s}.txt").exists()]
        print(table(rows, args.rate))
        return 0
    if args.repo is None:
        ap.error("--repo or --from-samples is required")
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        ap.error("py-spy is not installed here: pip install py-spy")
    repo = args.repo.resolve()
    if not (repo / "data").is_dir():
        ap.error(f"{repo}/data: no such folder; run `python bench/default_run.py --keep` first")
    samples = args.samples or repo.parent / f"{repo.name}-profile"
    samples.mkdir(parents=True, exist_ok=True)
    rows = []
    for stage in stages:
        wall, status = profile_stage(py_spy, repo, stage, samples / f"{stage}.txt", args.rate)
        print(f"{stage}: {wall:.0f} s, exit {status}", flush=True)
        if status != 0:
            return status
        rows.append((stage, wall, classify(samples / f"{stage}.txt")))
    print(f"\npy-spy samples: {samples}\n")
    print(table(rows, args.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
