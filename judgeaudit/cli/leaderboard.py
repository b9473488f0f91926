"""``judgeaudit leaderboard``: a real leaderboard rebuilt from its judge's annotations,
with length- and style-controlled win rates, Bradley-Terry CIs and gamed entries flagged."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    """``leaderboard``: a leaderboard from its judge's annotations."""
    lb = sub.add_parser("leaderboard", help="a real leaderboard from its judge's annotations: raw, length- and "
                                            "style-controlled win rates, Bradley-Terry CIs, gamed entries")
    lb.add_argument("--source", choices=("alpacaeval",), default="alpacaeval")
    lb.add_argument("--path", required=True, help="annotation file, or a folder of <model>.annotations.json[.gz]")
    lb.add_argument("--out", required=True)
    lb.add_argument("--n-boot", type=int, default=1000)
    lb.add_argument("--lc-cv", choices=["liblinear", "exact"], default="liblinear",
                    help="how the LC GLM's penalty is chosen: AlpacaEval's liblinear fits (its figures to the last "
                         "digit) or all models solved exactly at once (~10x faster, within ~0.1 point)")
    lb.add_argument("--seed", type=int, default=0)
    lb.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="worker processes for the gamed-output evidence and the liblinear fits (default: 2 where "
                         "there are two cores); the same figures")
    lb.set_defaults(handler=_leaderboard)


def _leaderboard(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from judgeaudit.audits.stats import BootstrapSettings
    from judgeaudit.audits.win_rates import LCSettings
    from judgeaudit.stages.leaderboard import (
        LeaderboardSettings,
        build_leaderboard,
        read_notes,
        write_leaderboard,
    )
    from judgeaudit.sources import read_source

    table, report = read_source(args.source, args.path)
    with tqdm(desc="leaderboard", unit="step", delay=1) as bar:
        settings = LeaderboardSettings(BootstrapSettings(args.n_boot, 0.95, args.seed),
                                       LCSettings(cv=args.lc_cv), workers=args.workers)
        result = build_leaderboard(table, settings, bar, order_check=report.checks)
    paths = write_leaderboard(result, Path(args.out))
    for note in read_notes(report):  # the skipped annotations, counted, and the reader's notes
        print(f"note: {note}")
    cols = ["model", "win_rate", "win_rate_se", "lc_win_rate", "sc_win_rate", "bt_score", "flagged"]
    print(result.board[cols].sort_values("lc_win_rate", ascending=False).to_string(index=False, float_format="%.2f"))
    print(f"separability (Bradley-Terry CIs apart): {result.summary['separability_bt']:.1%}; "
          f"flagged: {result.summary['flagged'] or 'none'}")
    position = result.summary["position"]
    if "skipped" in position:
        print(f"position bias: not measured: {position['skipped']}")
    for judge, j in position.get("judges", {}).items():
        fw, d = j["first_wins"], j["difference"]
        print(f"position bias of {judge}: the output shown first wins {fw['estimate']:.3f} "
              f"[{fw['ci_low']:.3f}, {fw['ci_high']:.3f}] (n = {fw['n']} instructions); a model shown first "
              f"rather than second: {d['difference']:+.1f} points [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}] "
              f"(randomization p = {d['p_randomization']:.2g} over {d['draws']} redraws)")
    print(f"judgeaudit: leaderboard in {paths['html']}")
    return 0
