"""Stage ``report``: the HTML + JSON report over every stage's outputs, and Prefect artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.common import load_params, read
from judgeaudit.layout import Layout
from judgeaudit.report.effects import as_metrics, find_effects
from judgeaudit.report.leakage_report import summary_table
from judgeaudit.report.page import write_report
from judgeaudit.tables import write_json


@flow(name="report")
def report_flow(params_path: str = "params.yaml", root: str = "data") -> str:
    """HTML + JSON report, and the same as Prefect artifacts."""
    load_params(params_path)  # its precision, which the report's machine line names
    layout = Layout(Path(root))
    wr = read(layout.metrics / "win_rates.parquet", "win_rates", layout)
    pls = read(layout.metrics / "pls.parquet", "pls", layout)
    summary = json.loads((layout.metrics / "summary.json").read_text())
    responses = read(layout.responses, "responses", layout)
    boat_file = layout.boat / "summary.json"
    boat = json.loads(boat_file.read_text()) if boat_file.exists() else None
    pu_file = layout.pu / "summary.json"
    pu = {**json.loads(pu_file.read_text()), "dir": str(layout.pu)} if pu_file.exists() else None
    matrices_file = layout.prefix / "matrices.parquet"
    prefix = ({"summary": json.loads((layout.prefix / "summary.json").read_text()),
               "matrices": pd.read_parquet(matrices_file)} if matrices_file.exists() else None)
    studies_file = layout.root / "leakage_studies" / "summary.json"
    studies = json.loads(studies_file.read_text()) if studies_file.exists() else None
    robust_file = layout.root / "robustness" / "summary.json"
    robust = ({**json.loads(robust_file.read_text()), "dir": str(robust_file.parent)} if robust_file.exists()
              else None)
    corr_file = layout.score_range / "correlations.parquet"
    score_range = ({"summary": json.loads((layout.score_range / "summary.json").read_text()),
                    "correlations": read(corr_file, "score_correlations", layout),
                    "dir": str(layout.score_range)} if corr_file.exists() else None)
    judges_dir = layout.root / "real_judges"
    info = json.loads((judges_dir / "summary.json").read_text()) if (judges_dir / "summary.json").exists() else {}
    judges = None
    if info:  # configured: its leaderboard, or the notes saying why there is none
        rows = info["rows"] > 0
        judges = {"card": read(judges_dir / "judge_quality.parquet", "judge_quality", layout) if rows
                  else pd.DataFrame(), "reproduction": pd.read_parquet(judges_dir / "reproduction.parquet"),
                  "pu": pd.read_parquet(judges_dir / "pu_consistency.parquet"),
                  "comparison": read(judges_dir / "judge_comparison.parquet", "judge_comparison", layout)
                  if info.get("judge_comparisons") else pd.DataFrame(),
                  "strategies": read(judges_dir / "strategy_comparison.parquet", "strategy_comparison", layout)
                  if info.get("strategy_comparisons") else pd.DataFrame(),
                  "juries": {"card": read(judges_dir / "juries.parquet", "judge_quality", layout),
                             "comparison": read(judges_dir / "jury_comparison.parquet", "judge_comparison", layout),
                             "summary": info["juries"]} if info.get("juries") else None,
                  "errors": read(judges_dir / "error_correlation.parquet", "error_correlation", layout)
                  if info.get("errors_together") else pd.DataFrame(),
                  "alt_test": read(judges_dir / "alt_test.parquet", "alt_test", layout)
                  if info.get("replaces_annotators") else pd.DataFrame(),
                  "selective": read(judges_dir / "selective.parquet", "selective", layout)
                  if info.get("trust_or_escalate") else pd.DataFrame(),
                  "reliability": read(judges_dir / "reliability.parquet", "reliability", layout)
                  if info.get("trust_or_escalate") else pd.DataFrame(),
                  "headline": pd.DataFrame(info["headline"]), "notes": info["notes"]}
    lb_dir = layout.root / "leaderboard"
    lb_info = json.loads((lb_dir / "summary.json").read_text()) if (lb_dir / "summary.json").exists() else {}
    leaderboard = ({"summary": lb_info, "dir": lb_dir, "board": pd.read_parquet(lb_dir / "win_rates.parquet")
                    if (lb_dir / "win_rates.parquet").exists() else None} if lb_info else None)
    paths = write_report(wr, pls, summary, responses, layout.report, boat=boat, pu=pu, prefix=prefix,
                         robustness=robust, score_range=score_range, judges=judges, leaderboard=leaderboard,
                         studies=studies)
    # every stage's intervals, keyed by row: what `dvc metrics diff` and `dvc exp show` compare
    write_json(as_metrics(find_effects(layout.root)), layout.report / "metrics.json")
    table = summary_table(pls)
    create_markdown_artifact(key="preference-leakage",
                             markdown="# Preference leakage (PLS, 95% CI, n prompts)\n\n"
                             + table.to_markdown(index=False) + f"\n\nReport: {paths['html'].resolve()}")
    create_table_artifact(key="pls-pairs", table=pls[pls.scope == "pair"].round(4).to_dict("records"))
    return str(paths["html"])
