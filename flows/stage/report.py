"""Stage ``report``: the HTML + JSON report over every stage's outputs, and Prefect artifacts."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.common import load_params, read
from judgeaudit.layout import Layout
from judgeaudit.report.effects import as_metrics, find_effects
from judgeaudit.report.inputs import read_inputs
from judgeaudit.report.leakage_report import summary_table
from judgeaudit.report.page import write_report
from judgeaudit.tables import write_json


@flow(name="report")
def report_flow(params_path: str = "params.yaml", root: str = "data") -> str:
    """HTML + JSON report, and the same as Prefect artifacts."""
    load_params(params_path)  # its precision, which the report's machine line names
    layout = Layout(Path(root))
    # the tables pass through flows.common.read: validated as a Prefect task, absent ones named with their stage
    got = read_inputs(layout, lambda path, table: read(path, table, layout))
    paths = write_report(got.win_rates, got.pls, got.summary, got.responses, layout.report, boat=got.boat, pu=got.pu,
                         prefix=got.prefix, robustness=got.robustness, score_range=got.score_range,
                         judges=got.judges, leaderboard=got.leaderboard, studies=got.studies)
    # every stage's intervals, keyed by row: what `dvc metrics diff` and `dvc exp show` compare
    write_json(as_metrics(find_effects(layout.root)), layout.report / "metrics.json")
    create_markdown_artifact(key="preference-leakage",
                             markdown="# Preference leakage (PLS, 95% CI, n prompts)\n\n"
                             + summary_table(got.pls).to_markdown(index=False)
                             + f"\n\nReport: {paths['html'].resolve()}")
    create_table_artifact(key="pls-pairs", table=got.pls[got.pls.scope == "pair"].round(4).to_dict("records"))
    return str(paths["html"])
