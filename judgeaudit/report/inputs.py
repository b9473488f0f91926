"""What the report reads: every stage's outputs under the data root, found through ``Layout``.

Its tables pass through ``read(path, table)``, which validates them against their suites
(judgeaudit/schemas): a stage's flow passes its own reader (a Prefect task around the same
validation), the default validates here, so the library needs no Prefect. An audit left
out of params.yaml wrote an empty or no summary; its section is then None and the report
leaves it out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgeaudit.layout import Layout
from judgeaudit.report.papers import gather_papers
from judgeaudit.schemas.validate import validate_table
from judgeaudit.tables import read_table

Read = Callable[[Path, str], pd.DataFrame]


@dataclass(frozen=True)
class ReportInputs:
    """What ``page.write_report`` shows: the leakage audit's tables, and a section per other stage
    (None: not configured)."""
    win_rates: pd.DataFrame
    pls: pd.DataFrame
    summary: dict
    responses: pd.DataFrame
    boat: dict | None
    pu: dict | None
    prefix: dict | None
    studies: dict | None
    robustness: dict | None
    score_range: dict | None
    judges: dict | None
    leaderboard: dict | None
    papers: dict | None = None  # the Papers section's rows (report/papers.py)


def validated_reader(layout: Layout) -> Read:
    """Read a table and validate it against its suite; bad rows go to ``layout.quarantine``."""
    def read(path: Path, table: str) -> pd.DataFrame:
        return validate_table(read_table(path), table, str(path), quarantine_dir=layout.quarantine)
    return read


def _json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def _judges(layout: Layout, read: Read) -> dict | None:
    """The real judges' leaderboard, or the notes saying why there is none; None where the
    stage is not configured (no summary, or an empty one)."""
    judges_dir = layout.real_judges
    info = _json(judges_dir / "summary.json") or {}
    if not info:
        return None
    rows = info["rows"] > 0
    return {"card": read(judges_dir / "judge_quality.parquet", "judge_quality") if rows else pd.DataFrame(),
            "reproduction": pd.read_parquet(judges_dir / "reproduction.parquet"),
            "pu": pd.read_parquet(judges_dir / "pu_consistency.parquet"),
            "comparison": read(judges_dir / "judge_comparison.parquet", "judge_comparison")
            if info.get("judge_comparisons") else pd.DataFrame(),
            "strategies": read(judges_dir / "strategy_comparison.parquet", "strategy_comparison")
            if info.get("strategy_comparisons") else pd.DataFrame(),
            "juries": {"card": read(judges_dir / "juries.parquet", "judge_quality"),
                       "comparison": read(judges_dir / "jury_comparison.parquet", "judge_comparison"),
                       "summary": info["juries"]} if info.get("juries") else None,
            "errors": read(judges_dir / "error_correlation.parquet", "error_correlation")
            if info.get("errors_together") else pd.DataFrame(),
            "alt_test": read(judges_dir / "alt_test.parquet", "alt_test")
            if info.get("replaces_annotators") else pd.DataFrame(),
            "selective": read(judges_dir / "selective.parquet", "selective")
            if info.get("trust_or_escalate") else pd.DataFrame(),
            "reliability": read(judges_dir / "reliability.parquet", "reliability")
            if info.get("trust_or_escalate") else pd.DataFrame(),
            "headline": pd.DataFrame(info["headline"]), "notes": info["notes"]}


def _leaderboard(layout: Layout) -> dict | None:
    lb_dir = layout.leaderboard
    info = _json(lb_dir / "summary.json") or {}
    if not info:
        return None
    board = lb_dir / "win_rates.parquet"
    return {"summary": info, "dir": lb_dir, "board": pd.read_parquet(board) if board.exists() else None}


def read_inputs(layout: Layout, read: Read | None = None) -> ReportInputs:
    """Every stage's outputs the report shows, read (in this order: a failed validation names
    the first bad table) through ``read``, ``validated_reader(layout)`` by default."""
    read = read or validated_reader(layout)
    win_rates = read(layout.win_rates, "win_rates")
    pls = read(layout.pls, "pls")
    summary = json.loads((layout.metrics / "summary.json").read_text())
    responses = read(layout.responses, "responses")
    boat = _json(layout.boat / "summary.json")
    pu = _json(layout.pu / "summary.json")
    pu = {**pu, "dir": str(layout.pu)} if pu is not None else None
    prefix = ({"summary": json.loads((layout.prefix / "summary.json").read_text()),
               "matrices": pd.read_parquet(layout.prefix / "matrices.parquet")}
              if (layout.prefix / "matrices.parquet").exists() else None)
    studies = _json(layout.leakage_studies / "summary.json")
    robustness = _json(layout.robustness / "summary.json")
    robustness = {**robustness, "dir": str(layout.robustness)} if robustness is not None else None
    corr_file = layout.score_range / "correlations.parquet"
    score_range = ({"summary": json.loads((layout.score_range / "summary.json").read_text()),
                    "correlations": read(corr_file, "score_correlations"),
                    "dir": str(layout.score_range)} if corr_file.exists() else None)
    return ReportInputs(win_rates=win_rates, pls=pls, summary=summary, responses=responses, boat=boat, pu=pu,
                        prefix=prefix, studies=studies, robustness=robustness, score_range=score_range,
                        judges=_judges(layout, read), leaderboard=_leaderboard(layout),
                        papers=gather_papers(layout))
