"""The warm stage process (flows/warm.py) against stages started cold, in one run: the same
`dvc repro` in two fresh clones of HEAD made beside this checkout, one with
``JUDGEAUDIT_WARM=0``; seconds per stage in each, their ratio, and whether the two runs'
outputs are equal, stage by stage (they must be: DVC cannot tell the two apart). Each run has an
empty Prefect result storage of its own: sharing one, the second run's tasks were served from
the first's results (bench/default_run.py says more).

    python bench/warm_stages.py                           # the tests' tiny config (3 to 6 min each)
    python bench/warm_stages.py --params params.yaml      # the full default (about 25 min each)

(params-small.yaml is a flow run's config, `judgeaudit run --params`: an overlay of
params.yaml that sets to null sections whose keys dvc.yaml's params name.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_run import ROOT, lock_outs, result_storage, timed_repro


def clone(name: str, params: str) -> Path:
    repo = ROOT.parent / f"judgeaudit-warm-bench-{os.getpid()}-{name}"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    if params == "tiny":  # the tiny `dvc repro` test's config, on a pool of two workers
        sys.path.insert(0, str(ROOT))
        from tests.tiny import write_tiny_params

        write_tiny_params(repo / "params.yaml", processes=2)
    elif params != "params.yaml":  # DVC reads params.yaml alone: an overlay's chain, merged
        sys.path.insert(0, str(ROOT))
        from judgeaudit.params_file import read_params_file

        merged = read_params_file(repo / params).data
        (repo / "params.yaml").write_text(yaml.safe_dump(merged, sort_keys=False))
    (repo / "dvc.lock").unlink(missing_ok=True)  # every stage runs
    return repo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="tiny",
                    help="a params file of this checkout, run as each clone's params.yaml (default: tiny)")
    args = ap.parse_args()
    runs = {}
    repos = {name: clone(name, args.params) for name in ("cold", "warm")}
    try:
        for name, repo in repos.items():  # cold first: the second run meets a warmer page cache
            with result_storage() as storage:  # one each: the warm run must not get the cold run's results
                warm = {"JUDGEAUDIT_WARM": "1" if name == "warm" else "0"}
                stages, total, status = timed_repro(repo, [], {**storage, **warm})
            if status:
                print(f"{name}: dvc repro exited {status}", file=sys.stderr)
                return status
            runs[name] = ({s: seconds for s, seconds, _ in stages}, total)
        (cold, cold_total), (warm, warm_total) = runs["cold"], runs["warm"]
        print(f"\n{args.params}: | stage | cold s | warm s | cold / warm |\n| --- | --- | --- | --- |")
        for stage in cold:
            print(f"| {stage} | {cold[stage]:.1f} | {warm.get(stage, float('nan')):.1f} | "
                  f"{cold[stage] / warm.get(stage, float('nan')):.2f} |")
        print(f"| **all {len(cold)} stages** | **{cold_total:.0f}** | **{warm_total:.0f}** | "
              f"**{cold_total / warm_total:.2f}** |")
        outs = {name: lock_outs(repo / "dvc.lock") for name, repo in repos.items()}
        differ = sorted(s for s in outs["cold"] if outs["cold"][s] != outs["warm"].get(s))
        print(f"outputs equal, cold and warm: {len(outs['cold']) - len(differ)} of {len(outs['cold'])} stages"
              + (f"; differ: {', '.join(differ)}" if differ else ""))
        return 1 if differ else 0
    finally:
        for repo in repos.values():
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
