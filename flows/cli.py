"""The ``judgeaudit`` command: run the whole audit or one stage as Prefect flows
(``run``), check dvc.yaml against the code (``deps``), and the library's commands
(``judgeaudit.cli``: validate, pu-audit, serve, effects, audit-verdicts, judge-benchmark,
leaderboard, check-params)."""

from __future__ import annotations

import argparse
import sys

from flows.run import add_arguments, apply_dispatch, run  # sets the environment before any import
from judgeaudit.cli import checks, dispatch, effects, leaderboard, pu_audit, serve, verdicts


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="judgeaudit",
        description="Audit LLM judges for bias: preference leakage and more, as Prefect flows "
                    "versioned by DVC and validated by Great Expectations.")
    sub = p.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run", help="run the whole audit, or one stage, as a Prefect flow")
    add_arguments(runner)
    runner.set_defaults(handler=_run)
    checks.add_validate(sub)
    pu_audit.add_pu_audit(sub)
    serve.add_serve(sub)
    effects.add_effects(sub)
    verdicts.add_audit_verdicts(sub)
    verdicts.add_judge_benchmark(sub)
    leaderboard.add_leaderboard(sub)
    deps = sub.add_parser("deps", help="check that dvc.yaml's deps cover the code each stage runs (its import "
                                       "closure) and its params the sections it reads, or rewrite them")
    deps.add_argument("--write", action="store_true",
                      help="rewrite dvc.yaml's code deps (data deps kept) and params from the code")
    deps.set_defaults(handler=_deps)
    checks.add_check_params(sub)
    return p


def _run(args: argparse.Namespace) -> int:
    return run(args.stage, args.params, args.root)


def _run_params(argv: list[str]) -> str | None:
    """The params file of a ``run`` command, read before the full parser, whose choices load
    NumPy (the params' ``cpu_dispatch`` must be set before it loads); None for the others."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("command", nargs="?")
    pre.add_argument("--params", default="params.yaml")
    known, _ = pre.parse_known_args(argv)
    return known.params if known.command == "run" else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (params := _run_params(argv)) and (status := apply_dispatch(params)) is not None:
        return status
    return dispatch(_parser().parse_args(argv))


def _deps(args: argparse.Namespace) -> int:
    import yaml

    from flows.deps import ROOT, rewrite_deps, rewrite_params, stage_deps, stage_params

    path = ROOT / "dvc.yaml"
    need, missing = stage_deps(path)
    params = {stage: stage_params(stage) for stage in need}
    if args.write:
        path.write_text(rewrite_params(rewrite_deps(path.read_text(), need), params))
        print(f"{path}: code deps and params rewritten for {len(need)} stages")
        return 0
    declared = {stage: spec.get("params", []) for stage, spec in yaml.safe_load(path.read_text())["stages"].items()}
    wrong = {stage: p for stage, p in params.items() if p != declared.get(stage, [])}
    for stage, files in missing.items():
        if files:
            print(f"{stage}: dvc.yaml's deps miss {', '.join(files)}")
    for stage, p in wrong.items():
        print(f"{stage}: dvc.yaml's params are {declared.get(stage, [])}, its tasks' cache keys and flow read {p}")
    if any(missing.values()) or wrong:
        print("run `judgeaudit deps --write` to rewrite them from the code", file=sys.stderr)
        return 1
    print(f"{path}: the deps of all {len(need)} stages cover the code they run, and their params what it reads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
