"""Where the default run's time goes: `dvc repro` stage by stage, then a second `dvc repro`
(which must do nothing), in one run. By default on a fresh clone of HEAD made beside this
checkout (so that params.yaml's ../shared/data paths resolve), with this virtual
environment's dvc and the clone's own code; the clone's dvc.lock is then compared with this
checkout's, stage by stage (same outputs = the run reproduces).

    python bench/default_run.py                 # fresh clone of HEAD, full default run
    python bench/default_run.py --repo . -- -f  # this checkout, forced (dvc repro -f)
    python bench/default_run.py --keep          # keep the clone for inspection
    python bench/default_run.py --seed 2024     # the same run under another seed, and which of
                                                # this checkout's data/ effects it repeats
    python bench/default_run.py --dispatch compatible --against bench/reference/default-outs-compatible-amd-26-2.json
                                                # under cpu_dispatch compatible, against another CPU's
                                                # outputs (--write-outs wrote them there)
    python bench/default_run.py --beside fe6686f  # the same default run of another commit first, in
                                                # a clone of its own, and the ratio of the two times

Prefect keeps each cached task's result in its result storage, keyed on the task's code closure,
params sections and input contents (tasks/cache.py), across clones and runs: on a machine that
ran the default before, a clean clone's `dvc repro` serves every task whose key is unchanged
from there (robustness in 5 s instead of 2 min). A fresh machine has none, so by default the run
gets an empty storage of its own (PREFECT_LOCAL_STORAGE_PATH).

The reseeded run is the noise floor of `judgeaudit effects`: an effect that the same
configuration loses under another seed is not one a smaller configuration can be held to.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from judgeaudit.dispatch import SETTINGS
from judgeaudit.report.machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
RUNNING = re.compile(r"Running stage '([^']+)'")


def busy_seconds() -> float:
    """CPU seconds this machine has spent busy, all cores (/proc/stat; 0 where there is none):
    over a stage, busy seconds / wall seconds = the cores it kept busy on an idle machine."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def host_speed(seconds: float = 5.0) -> float:
    """Training steps per second of one fixed workload on one thread: a Llama of the default's
    `small` size (2 layers, hidden 128), batch 16 x 64 tokens, seeded. The same code ran the
    default in 13.4 and 10.5 min on one VM four hours apart; measured beside a run, this says
    whether the hour was slow, so that two runs compare by work as well as by clock."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=1024, hidden_size=128, intermediate_size=256,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         max_position_embeddings=256))
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 1024, (16, 64))

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        optimiser.step()
        optimiser.zero_grad()

    try:
        for _ in range(3):  # allocator and kernel selection
            step()
        steps, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            step()
            steps += 1
        return steps / (time.perf_counter() - started)
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def result_storage(fresh: bool = True) -> Iterator[dict[str, str]]:
    """The environment for a run's Prefect result storage: an empty one of its own, as a fresh
    machine has, removed afterwards; or (``fresh=False``) this machine's."""
    if not fresh:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="judgeaudit-prefect-storage-") as path:
        yield {"PREFECT_LOCAL_STORAGE_PATH": path}


def timed_repro(repo: Path, dvc_args: list[str], env: dict[str, str] | None = None
                ) -> tuple[list[tuple[str, float, float]], float, int]:
    """([(stage, wall seconds, cores busy)] for each stage that ran, in order; total seconds;
    exit status) of one `dvc repro`, its log passed through."""
    dvc = Path(sys.executable).with_name("dvc")
    # the repo's own code, not this checkout's; this environment's interpreter for the stages
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(repo),
           "PATH": f"{dvc.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = mark = time.monotonic()
    busy_mark = busy_seconds()
    stages: list[tuple[str, float, float]] = []
    current = None
    proc = subprocess.Popen([str(dvc), "repro", *dvc_args], cwd=repo, env=env, text=True, bufsize=1,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        if match := RUNNING.search(line):
            now, busy = time.monotonic(), busy_seconds()
            if current:
                stages.append((current, now - mark, (busy - busy_mark) / max(now - mark, 1e-9)))
            current, mark, busy_mark = match.group(1), now, busy
    status = proc.wait()
    end, busy = time.monotonic(), busy_seconds()
    if current:
        stages.append((current, end - mark, (busy - busy_mark) / max(end - mark, 1e-9)))
    return stages, end - started, status


def lock_outs(lock: Path) -> dict[str, dict[str, str]]:
    """{stage: {out path: md5}} of a dvc.lock."""
    stages = yaml.safe_load(lock.read_text())["stages"]
    return {name: {o["path"]: o["md5"] for o in s.get("outs", [])} for name, s in stages.items()}


def set_param(params: Path, key: str, value: object) -> None:
    """Set a top-level value of params.yaml in place (a line edit: its comments stay)."""
    text, n = re.subn(rf"(?m)^{key}: *[^\s#]+ *$", f"{key}: {value}", params.read_text())
    if n != 1:
        raise SystemExit(f"{params}: no single top-level `{key}:` line to set")
    params.write_text(text)


def reference_outs(path: Path) -> dict[str, dict[str, str]]:
    """{stage: {out path: md5}} of a dvc.lock, or of a JSON file --write-outs wrote."""
    return json.loads(path.read_text())["stages"] if path.suffix == ".json" else lock_outs(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="run here instead of in a fresh clone of HEAD")
    ap.add_argument("--keep", action="store_true", help="keep the fresh clone")
    ap.add_argument("--seed", type=int, help="run the clone's params.yaml under this seed, then compare its "
                                             "effects with this checkout's data/ (judgeaudit effects --reseeded)")
    ap.add_argument("--dispatch", choices=sorted(SETTINGS),
                    help="run the clone's params.yaml under this cpu_dispatch (judgeaudit/dispatch.py)")
    ap.add_argument("--against", type=Path, default=ROOT / "dvc.lock",
                    help="the outputs to compare the clone's with: a dvc.lock or a --write-outs file "
                         "(default: this checkout's dvc.lock)")
    ap.add_argument("--write-outs", type=Path, help="write the clone's outputs' hashes, with this CPU, to a JSON "
                                                    "file (e.g. under bench/reference, for another CPU's --against)")
    ap.add_argument("--prefect-cache", action="store_true",
                    help="use this machine's Prefect result storage (default: an empty one, as on a fresh "
                         "machine)")
    ap.add_argument("--beside", metavar="REV",
                    help="first run the default of commit REV in a fresh clone of its own (same hour, same "
                         "machine), then this one, and print the ratio of their times")
    ap.add_argument("dvc_args", nargs="*", help="after --: arguments for the first dvc repro")
    args = ap.parse_args()
    if (args.seed is not None or args.dispatch) and args.repo:
        ap.error("--seed and --dispatch edit the params.yaml of the fresh clone it runs; not with --repo")
    repo = args.repo.resolve() if args.repo else ROOT.parent / f"judgeaudit-default-run-{os.getpid()}"
    if not args.repo:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    if args.seed is not None:
        set_param(repo / "params.yaml", "seed", args.seed)
    if args.dispatch:
        set_param(repo / "params.yaml", "cpu_dispatch", args.dispatch)
    try:
        beside = None
        if args.beside:  # the other commit first, in its own clone, with its own code
            other = ROOT.parent / f"judgeaudit-default-run-{os.getpid()}-{args.beside[:12]}"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(other)], check=True)
            subprocess.run(["git", "checkout", "-q", args.beside], cwd=other, check=True)
            try:
                with result_storage(fresh=not args.prefect_cache) as env:
                    _, beside, status = timed_repro(other, args.dvc_args, env)
                if status:
                    print(f"{args.beside}: dvc repro exited {status}", file=sys.stderr)
                    return status
            finally:
                if not args.keep:
                    shutil.rmtree(other, ignore_errors=True)
        speed_before = host_speed()
        with result_storage(fresh=not args.prefect_cache) as env:
            stages, total, status = timed_repro(repo, args.dvc_args, env)
            if status:
                print(f"dvc repro exited {status}", file=sys.stderr)
                return status
            _, again, status = timed_repro(repo, [], env)
        print(f"\n| stage | seconds | share | cores busy (of {os.cpu_count()}) |\n| --- | --- | --- | --- |")
        for name, seconds, cores in sorted(stages, key=lambda s: -s[1]):
            print(f"| {name} | {seconds:.0f} | {seconds / total:.0%} | {cores:.2f} |")
        mean_cores = sum(s * c for _, s, c in stages) / max(sum(s for _, s, _ in stages), 1e-9)
        print(f"| **all {len(stages)} stages** | **{total:.0f}** ({total / 60:.1f} min) | | {mean_cores:.2f} |")
        print(f"second `dvc repro` (nothing to do): {again:.1f} s, exit {status}")
        if beside is not None:
            print(f"beside {args.beside}: {beside:.0f} s ({beside / 60:.1f} min) then this tree {total:.0f} s: "
                  f"ratio {total / beside:.2f}x")
        print("Prefect's result storage: " + ("this machine's" if args.prefect_cache else "an empty one"))
        print(f"host speed (bench/default_run.py host_speed, one-thread training steps/s): "
              f"{speed_before:.1f} before the run, {host_speed():.1f} after")
        if args.seed is not None:
            judgeaudit = Path(sys.executable).with_name("judgeaudit")
            subprocess.run([str(judgeaudit), "effects", str(ROOT / "data"), "--reseeded", str(repo / "data")])
        elif not args.repo:
            ours, theirs = reference_outs(args.against), lock_outs(repo / "dvc.lock")
            differ = sorted(s for s in theirs if ours.get(s) != theirs[s])
            print(f"outputs equal to {args.against}: {len(theirs) - len(differ)} of {len(theirs)} stages"
                  + (f"; differ: {', '.join(differ)}" if differ else ""))
        if args.write_outs:
            args.write_outs.write_text(json.dumps({"cpu": cpu_model(), "cpu_dispatch": args.dispatch or "default",
                                                   "stages": lock_outs(repo / "dvc.lock")}, indent=1) + "\n")
        return status
    finally:
        if not args.repo and not args.keep:
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
