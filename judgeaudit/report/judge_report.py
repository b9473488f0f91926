"""The judge leaderboard: what a person reads first about each judge (accuracy, positional
agreement, significant biases, a plain verdict), then plots, each pair of judges compared on
the same pairs, and the tables behind them; the sections come from their own modules."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from judgeaudit.report.alt_test_report import alt_test_section
from judgeaudit.report.format import STYLE, judge_table
from judgeaudit.report.judge_attacks_report import attacks_section
from judgeaudit.report.judge_card_report import (card_grid, first_screen, plot_accuracy_agreement, plot_subsets,
                                                 reproduction_table)
from judgeaudit.report.judge_comparison_report import comparison_section, errors_section, strategies_section
from judgeaudit.report.jury_report import juries_section
from judgeaudit.report.selective_report import selective_section


def leaderboard_section(judges: dict, out_dir: Path) -> str:
    """The judge leaderboard's HTML (plots written into ``out_dir``). ``judges``: card,
    reproduction, pu, headline and notes, and where the audit made them: comparison, strategies,
    errors (``error_correlation``'s table), alt_test, juries (see ``juries_section``)."""
    card, reproduction, pu, headline = (judges[k] for k in ("card", "reproduction", "pu", "headline"))
    notes = judges["notes"]
    parts = ["<h2>Read this first: the judges</h2>", first_screen(headline)]
    if notes:
        parts.append("<p><b>Notes:</b></p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if not card.empty:
        scatter = plot_accuracy_agreement(card, out_dir / "judges_accuracy_agreement.png")
        bars = plot_subsets(card, out_dir / "judges_subsets.png", {"llmbar": "Vanilla"})
        for png, alt in ((scatter, "accuracy against positional agreement"), (bars, "accuracy per subset")):
            if png is not None:
                parts.append(f"<img src='{png.name}' alt='{alt}'>")
    parts += [comparison_section(judges.get("comparison"), out_dir),
              strategies_section(judges.get("strategies"), out_dir), errors_section(judges.get("errors"), out_dir),
              juries_section(judges.get("juries"), card, headline, out_dir),
              alt_test_section(judges.get("alt_test"), out_dir), selective_section(judges.get("selective"), out_dir, judges.get("reliability"))]
    if not reproduction.empty:
        parts += ["<h2>The benchmarks' own published figures, recomputed</h2>", judge_table(reproduction_table(reproduction))]
    if not pu.empty:
        overall = pu[pu.qtype == "all"][["source", "judge", "strategy", "n_pairs", "cons_orig", "cons_adj",
                                         "flip_rate", "check_n", "check_gain", "check_gain_ci_low",
                                         "check_gain_ci_high", "recommendation"]]
        overall = overall.astype({"n_pairs": "Int64", "check_n": "Int64"})
        parts += ["<h2>PU audit (partial optimal transport) with its self-check</h2>",
                  "<p>cons_orig / cons_adj: agreement with the labels the audit did not see, before and after "
                  "flipping the verdicts little verified mass reaches. check_gain: the same gain measured on "
                  "held-out verified pairs only (what a user can measure), with its 95% CI; the recommendation "
                  "follows from it.</p>", judge_table(overall)]
    if not card.empty:
        title = "Report card (pooled over subsets): estimate [95% CI], n pairs; per subset in judge_quality.parquet"
        parts += [f"<h2>{title}</h2>", judge_table(card_grid(card))]
    return "\n".join(parts)


def write_judge_report(judges: dict, out_dir: Path, attacks: pd.DataFrame | None = None) -> Path:
    """A standalone report.html for ``judgeaudit audit-verdicts`` and ``judge-benchmark``
    (``judges``: see ``leaderboard_section``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    body = (f"<!doctype html><html><head><meta charset='utf-8'><title>judgeaudit: judge report card</title>"
            f"<style>{STYLE}</style></head><body><h1>Judge report card</h1>"
            + leaderboard_section(judges, out_dir)
            + attacks_section(attacks if attacks is not None else pd.DataFrame(), out_dir) + "</body></html>")
    path = out_dir / "report.html"
    path.write_text(body)
    return path
