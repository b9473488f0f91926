"""Stage ``report``: the HTML and JSON report over every stage's outputs, the intervals of
every stage keyed by row (report/metrics.json), and the figures file git keeps beside
dvc.lock (figures.json: `dvc metrics diff`, `judgeaudit agree`). A stage left out of
params.yaml is left out of the report."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.report.effects import as_metrics, find_effects, write_figures
from judgeaudit.report.inputs import read_inputs
from judgeaudit.report.leakage_report import summary_table
from judgeaudit.report.page import write_report
from judgeaudit.report.papers import papers_markdown
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.io import read
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="report",
    params=(),  # it reads none, but names the run's precision (applied by the runner)
    deps=("metrics", "responses", "boat", "pu", "prefix", "robustness", "leakage_studies", "score_range",
          "real_judges", "leaderboard", "live_judge"),  # figures.json gathers every stage's summary
    outs=("report",),
    committed=("figures.json",),
    plots=(("report/plots/pls_by_tier.json",
            {"title": "Preference Leakage Score by association tier and method (95% bootstrap CI in the file)",
             "template": "bar_horizontal", "x": "estimate", "y": "cell"}),
           ("report/plots/raw_vs_controlled.json",
            {"title": "AlpacaEval 2.0, raw against length-controlled win rate (%)",
             "template": "scatter", "x": "win_rate", "y": "lc_win_rate"}),
           ("report/pls_by_tier.png", {})),
)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    # every table validated on the way in; an absent one names the stage that writes it
    got = read_inputs(layout, lambda path, table: read(path, table, layout))
    paths = write_report(got.win_rates, got.pls, got.summary, got.responses, layout.report, boat=got.boat, pu=got.pu,
                         prefix=got.prefix, robustness=got.robustness, score_range=got.score_range,
                         judges=got.judges, leaderboard=got.leaderboard, studies=got.studies,
                         papers=got.papers)
    found = find_effects(layout.root)
    write_json(as_metrics(found), layout.report / "metrics.json")
    write_figures(layout.root)
    markdown = ("# Preference leakage (PLS, 95% CI, n prompts)\n\n" + summary_table(got.pls).to_markdown(index=False)
                + f"\n\nReport: {paths['html'].resolve()}")
    pairs = got.pls[got.pls.scope == "pair"].round(4).to_dict("records")
    # shown as Prefect artifacts where the stage runs as a flow (flows/stage_flow.py)
    return {"html": str(paths["html"]), "artifacts": {"preference-leakage": markdown, "pls-pairs": pairs,
                                                    "papers": papers_markdown(got.papers)}}
