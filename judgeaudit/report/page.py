"""The audit report's page: report.html over every section (each from its own module), the
machine it was computed on, report.json with every figure, and the data of dvc.yaml's plots."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from judgeaudit.dispatch import SETTINGS
from judgeaudit.report import judge_report, leaderboard_report
from judgeaudit.report.boat_report import boat_section
from judgeaudit.report.format import html_table
from judgeaudit.report.leakage_report import (plot_pls, plot_win_rates, pls_plot_data, summary_table,
                                              task_type_section)
from judgeaudit.report.leakage_studies_report import studies_section
from judgeaudit.report.machine import machine
from judgeaudit.report.papers import papers_markdown, papers_section
from judgeaudit.report.prefix_report import prefix_section
from judgeaudit.report.pu_report import pu_section
from judgeaudit.report.robustness_report import robustness_section
from judgeaudit.report.score_range_report import score_range_section
from judgeaudit.tables import write_json


def _reproducible(made_on: dict) -> str:
    """How far the tables' bits carry, by the run's ``cpu_dispatch`` (judgeaudit/dispatch.py): the
    cross-vendor claim holds for the whole setting only, not for MKL's branch set by hand alone."""
    if made_on.get("cpu_dispatch") == SETTINGS["compatible"]:
        return ("cpu_dispatch compatible (AVX2, MKL's cross-vendor branch): the bootstrap stage's models "
                "came out bit-equal on an Intel and an AMD CPU under it")
    return ("the tables are bitwise reproducible on one kind of CPU, not across CPUs "
            "(params.yaml's cpu_dispatch)")


def _consistency(figure: dict) -> str:
    """The position consistency with its CI and n."""
    return (f"{figure['estimate']:.3f} [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}] "
            f"(n={figure['n']} verdict pairs over {figure['n_prompts']} prompts)")


def write_report(wr: pd.DataFrame, pls: pd.DataFrame, summary: dict, responses: pd.DataFrame,
                 out_dir: Path, boat: dict | None = None, pu: dict | None = None,
                 prefix: dict | None = None, robustness: dict | None = None,
                 score_range: dict | None = None, judges: dict | None = None,
                 leaderboard: dict | None = None, studies: dict | None = None,
                 papers: dict | None = None) -> dict[str, Path]:
    """Write report.html, report.json and the plots into ``out_dir``, with the data of the plots
    dvc.yaml declares under ``out_dir/plots``. ``judges``: the real judges' leaderboard (card,
    reproduction, pu, headline, notes, comparison, strategies), shown first; ``papers``: the
    Papers section's rows (report/papers.py), after it, also as papers.md."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made_on = machine()
    judges_html = ""
    if judges is not None:
        judges_html = judge_report.leaderboard_section(judges, out_dir)
    leaderboard_html = ""
    if leaderboard is not None:
        leaderboard_html = leaderboard_report.leaderboard_section(leaderboard["board"], leaderboard["summary"],
                                                                  out_dir, leaderboard.get("dir"))
    prefix_html = prefix_section(prefix, out_dir)
    pls_png = plot_pls(pls, out_dir / "pls_by_tier.png")
    write_json(pls_plot_data(pls).to_dict("records"), out_dir / "plots" / "pls_by_tier.json")
    wr_png = plot_win_rates(wr, out_dir / "win_rates.png")
    pairs = pls[pls.scope == "pair"][["tier", "method", "student_base", "generator_i", "generator_j",
                                      "judge_i", "judge_j", "wr_ii", "wr_ij", "estimate", "ci_low",
                                      "ci_high", "n"]]
    samples = responses.groupby("student_id").head(1)[["student_id", "prompt", "response"]].head(24)
    body = f"""<!doctype html><html><head><meta charset="utf-8"><title>judgeaudit: preference leakage</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}} table.t{{border-collapse:collapse;font-size:12px}}
table.t td,table.t th{{padding:2px 6px;border-bottom:1px solid #ddd}}
.ok{{color:#17662a;font-weight:bold}} .care{{color:#8a5a00;font-weight:bold}} .bad{{color:#a11;font-weight:bold}}
img{{max-width:100%}}</style></head><body>
<h1>judgeaudit report</h1>
{judges_html}
{leaderboard_html}
{papers_section(papers, out_dir)}
<h1>Preference leakage audit (embedded experiment)</h1>
<p>Seed {summary['seed']}; {summary['n_judgments']} judgments; bootstrap {summary['n_boot']} resamples over
eval prompts, {int(summary['confidence'] * 100)}% percentile CIs; n = number of eval prompts per figure.
Position consistency of verdicts across the two presentation orders:
{_consistency(summary['position_consistency'])}.
Computed on {html.escape(made_on['cpu'])} ({made_on['cores']} cores, {made_on['simd']}; scoring passes in {made_on['precision']}; accelerator: {made_on['accelerator'] or 'none'}),
torch {made_on['packages']['torch']}: {_reproducible(made_on)}.</p>
<p>PLS &gt; 0 means judges favour the students of the generator they are related to.</p>
<h2>PLS by association tier</h2>{html_table(summary_table(pls))}
<img src="{pls_png.name}" alt="PLS by tier">
{task_type_section(summary)}
{studies_section(studies, out_dir)}
<h2>Win rates</h2><img src="{wr_png.name}" alt="win rates">
<h2>PLS per generator pair</h2>{html_table(pairs)}
<h2>Win rates per judge</h2>{html_table(wr.drop(columns=["metric", "confidence"]))}
{robustness_section(robustness, out_dir)}
{boat_section(boat, out_dir)}
{pu_section(pu, out_dir)}
{prefix_html}
{score_range_section(score_range, out_dir)}
<h2>Sample responses</h2>{html_table(samples.map(lambda s: str(s)[:160]))}
</body></html>"""
    (out_dir / "report.html").write_text(body)
    if papers is not None:
        (out_dir / "papers.md").write_text(papers_markdown(papers))
    figures = {"machine": made_on, "summary": summary, "pls": pls.to_dict("records"), "win_rates": wr.to_dict("records"),
               "boat": boat or {}, "pu": pu or {}, "robustness": robustness or {},
               "prefix": {"summary": prefix["summary"], "matrices": prefix["matrices"].to_dict("records")}
               if prefix else {},
               "real_judges": {"headline": judges["headline"].to_dict("records"), "notes": judges["notes"],
                               "comparison": judges.get("comparison", pd.DataFrame()).to_dict("records"),
                               "strategies": judges.get("strategies", pd.DataFrame()).to_dict("records"),
                               "juries": judges["juries"]["summary"] if judges.get("juries") else [],
                               "error_correlation": judges.get("errors", pd.DataFrame()).to_dict("records"),
                               "alt_test": judges.get("alt_test", pd.DataFrame()).to_dict("records"),
                               "selective": judges.get("selective", pd.DataFrame()).to_dict("records")}
               if judges else {},
               "score_range": {"summary": score_range["summary"],
                               "correlations": score_range["correlations"].to_dict("records")}
               if score_range else {},
               "papers": papers or {}}
    write_json(figures, out_dir / "report.json")
    return {"html": out_dir / "report.html", "json": out_dir / "report.json", "pls_png": pls_png,
            "win_rates_png": wr_png}
