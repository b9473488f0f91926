"""``judgeaudit validate`` and ``judgeaudit check-params``: check one file against its
contract (a table against its stage's suite, a params file against the settings' types)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_validate(sub: argparse._SubParsersAction) -> None:
    """``validate TABLE PATH``: a table file against a stage's data contract."""
    val = sub.add_parser("validate", help="check a table file against a stage's data contract")
    val.add_argument("table", help="prompts, synthetic, responses, judgments, win_rates or pls")
    val.add_argument("path", help="the table file (.parquet, .jsonl or .csv)")
    val.add_argument("--quarantine", type=Path, default=None,
                     help="folder for the rows that fail (default: quarantine/ beside the table); "
                          "each failure gets its own file, named by table, source and time")
    val.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from judgeaudit.schemas.suites import SUITES
    from judgeaudit.schemas.validate import validate_table
    from judgeaudit.tables import InputError, read_table

    if args.table not in SUITES:
        raise InputError(f"unknown table {args.table!r}; known: {sorted(SUITES)}")
    frame = validate_table(read_table(args.path), args.table, args.path,
                           quarantine_dir=args.quarantine or Path(args.path).parent / "quarantine")
    print(f"{args.path}: {len(frame)} rows pass the {args.table} suite")
    return 0


def add_check_params(sub: argparse._SubParsersAction) -> None:
    """``check-params``: load a params file (every section typed and checked)."""
    check = sub.add_parser("check-params", help="validate a params file and exit")
    check.add_argument("--params", default="params.yaml")
    check.set_defaults(handler=_check_params)


def _check_params(args: argparse.Namespace) -> int:
    from judgeaudit.config import load_params
    from judgeaudit.judging.modes import registered_modes

    params = load_params(args.params)
    # a mode is any registered one, so the settings cannot list them: checked here
    named = {"judge.mode": params.judge.mode, **{f"judge.modes.{k}": v for k, v in params.judge.modes.items()}}
    for field, mode in named.items():
        if mode not in registered_modes():
            raise ValueError(f"{args.params}: {field}: unknown verdict mode {mode!r}; registered: "
                             f"{', '.join(registered_modes())}")
    print(f"{args.params}: ok")
    return 0
