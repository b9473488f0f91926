"""The ``judgeaudit`` command: run the whole audit or one stage as Prefect flows
(``run``), check dvc.yaml against the code (``deps``), and the library's commands
(``judgeaudit.cli``: validate, pu-audit, serve, effects, audit-verdicts, judge-benchmark,
leaderboard, check-params)."""

from __future__ import annotations

import argparse
import sys

from flows.run import add_arguments, apply_dispatch, run  # sets the environment before any import


def _parser() -> argparse.ArgumentParser:
    # after `run`'s cpu_dispatch is applied (main): some commands' modules load NumPy
    from judgeaudit.cli import agree, audit_judge, checks, effects, leaderboard, pu_audit, serve, verdicts

    p = argparse.ArgumentParser(
        prog="judgeaudit",
        description="Audit LLM judges for bias: preference leakage and more, as Prefect flows "
                    "versioned by DVC and validated by Great Expectations.")
    sub = p.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run", help="run the whole audit, or one stage (a Prefect flow run where "
                                        "PREFECT_API_URL names a server)")
    add_arguments(runner)
    runner.set_defaults(handler=_run)
    checks.add_validate(sub)
    pu_audit.add_pu_audit(sub)
    serve.add_serve(sub)
    effects.add_effects(sub)
    agree.add_parser(sub)
    verdicts.add_audit_verdicts(sub)
    verdicts.add_judge_benchmark(sub)
    audit_judge.add_audit_judge(sub)
    leaderboard.add_leaderboard(sub)
    deps = sub.add_parser("deps", help="check that dvc.yaml is what the stages declare (their code, data, "
                                       "params and outputs), or write it from them")
    deps.add_argument("--write", action="store_true", help="write dvc.yaml from the stages' declarations")
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
    from judgeaudit.cli import dispatch

    return dispatch(_parser().parse_args(argv))


def _deps(args: argparse.Namespace) -> int:
    from judgeaudit.runner.dvcyaml import ROOT, check, render

    path = ROOT / "dvc.yaml"
    if args.write:
        path.write_text(render())
        print(f"{path}: written from the stages' declarations")
        return 0
    if (differs := check(path)) is not None:
        print(f"{path}: differs from the stages' declarations: {differs}")
        print("run `judgeaudit deps --write` to write it from them", file=sys.stderr)
        return 1
    print(f"{path}: every stage as declared (its code, data, params and outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
