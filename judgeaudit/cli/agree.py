"""``judgeaudit agree``: whether every effect and every figure of the workspace's figures
file agrees, within a stated tolerance, with the one committed at a revision (the check
after ``dvc repro`` on a CPU other than the lock's). The tolerance and the comparison are
judgeaudit/report/agreement.py's; this module parses the command line and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from judgeaudit.report.agreement import Agreement, AgreementError, Tolerance, committed_and_workspace, compare
from judgeaudit.report.effects import FIGURES


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``agree`` subcommand on ``subparsers``."""
    summary = ("whether every effect and figure agrees, within a tolerance, with the figures committed at "
               "a revision (dvc metrics diff, judged); exit 0 agrees, 1 disagrees, 2 error")
    agree = subparsers.add_parser("agree", help=summary, description=summary)
    agree.add_argument("--against", default="HEAD", metavar="REV",
                       help="the git revision to compare with (HEAD)")
    agree.add_argument("--tol", action="append", default=[], metavar="X|STAGE=X",
                       help="how far a figure may move, as a multiple of its interval's width at REV "
                       f"(default {Tolerance.width}); STAGE=X for one stage's figures; repeatable")
    agree.add_argument("--floor", type=float, default=Tolerance.floor,
                       help="what any figure may move, in its own units (an interval without a width; "
                       "default 0)")
    agree.add_argument("--figures", default=str(Path("data") / FIGURES), metavar="FILE",
                       help="the figures file the report stage writes (data/figures.json)")
    agree.set_defaults(handler=handle)
    return agree


def tolerance(tols: list[str], floor: float) -> Tolerance:
    """``--tol`` values (``X`` or ``STAGE=X``) and ``--floor`` as a ``Tolerance``."""
    width, by_stage = Tolerance.width, {}
    for tol in tols:
        stage, _, value = tol.rpartition("=")
        try:
            x = float(value)
        except ValueError:
            raise ValueError(f"--tol {tol}: expected X or STAGE=X with X a number") from None
        if x < 0:
            raise ValueError(f"--tol {tol}: a tolerance is not negative")
        if stage:
            by_stage[stage] = x
        else:
            width = x
    if floor < 0:
        raise ValueError(f"--floor {floor:g}: a tolerance is not negative")
    return Tolerance(width, floor, by_stage)


def _num(x: float | int | None) -> str:
    return "missing" if x is None else f"{x:.6g}"


def _sign(sign: int) -> str:
    return f"{sign:+d}" if sign else "0"


def report(result: Agreement, tol: Tolerance, rev: str) -> str:
    """The moved figures, the changed effects and the verdict, as printed."""
    lines = [f"tolerance: {tol.describe(rev)}"]
    if result.moved:
        lines.append(f"figures moved beyond tolerance ({len(result.moved)}):")
        rows = [("field", rev, "workspace", "moved", "allowed", "interval")]
        rows += [(m.field, _num(m.old), _num(m.new),
                  f"{m.new - m.old:+.6g}" if m.old is not None and m.new is not None else "-",
                  "equal" if m.allowed is None else _num(m.allowed), m.where) for m in result.moved]
        widths = [max(len(r[k]) for r in rows) for k in range(5)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5] for r in rows]
    if result.flipped:
        lines.append(f"effects appeared, vanished or reversed ({len(result.flipped)}):")
        lines += [f"  {f.kind:<8}  effect {_sign(f.old)} -> {_sign(f.new)}  {f.where}"
                  for f in result.flipped]
    if result.agrees:
        counts = (f"every figure of {result.intervals} intervals within tolerance, "
                  f"all {result.effects} effects kept")
    else:
        counts = (f"{len(result.moved)} figures of {result.intervals} intervals beyond tolerance, "
                  f"{len(result.flipped)} of {result.effects} effects appeared, vanished or reversed")
    within = (f"; {result.within} figures moved within it (dvc metrics diff {rev} lists them)"
              if result.within else "")
    lines.append(f"{'agrees' if result.agrees else 'disagrees'} with {rev}: {counts}{within}")
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    """Run ``judgeaudit agree``: 0 agrees, 1 disagrees, 2 error (a one-line message on stderr)."""
    try:
        tol = tolerance(args.tol, args.floor)
        old, new = committed_and_workspace(Path(args.figures), args.against)
    except (AgreementError, ValueError) as exc:
        print(f"judgeaudit agree: error: {exc}", file=sys.stderr)
        return 2
    result = compare(old, new, tol)
    print(report(result, tol, args.against))
    return 0 if result.agrees else 1
