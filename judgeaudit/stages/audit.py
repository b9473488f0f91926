"""Stage ``audit``: win rates and the Preference Leakage Score, with bootstrap CIs."""

from __future__ import annotations

import logging

import pandas as pd

from judgeaudit.audits.leakage import leakage_scores, pair_scores, win_rates
from judgeaudit.audits.stats import clustered_share
from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.report.leakage_paper import audit_paper_rows, setting_of
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(name="audit", params=("seed", "models", "leakage", "audit"), deps=("judgments", "prompts"),
              outs=("metrics",), reads=("judgments", "prompts"), metrics=("metrics/summary.json",))


def leakage_audit(params: Params, judgments: pd.DataFrame, prompts: pd.DataFrame
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """(win-rate table, PLS table, summary, PLS per prompt category and task type) from
    validated judgments and the prompts they were asked on."""
    a = params.audit
    kw = dict(n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    scores = pair_scores(judgments)
    wr = win_rates(scores, **kw)
    pls = leakage_scores(scores, params.judge_roster(), **kw)
    consistency = judgments.pivot_table(index=["judge", "method", "student_base", "generator_a",
                                               "generator_b", "prompt_id"], columns="order",
                                        values="verdict", aggfunc="first")
    flipped = consistency["AB"].map({"A": "B", "B": "A", "tie": "tie"})
    same = flipped == consistency["BA"]  # the verdict names the same response in both orders
    consistent = clustered_share(same.to_numpy(), same.index.get_level_values("prompt_id"), **kw)
    summary = {
        "seed": params.seed, "n_boot": a.n_boot, "confidence": a.confidence,
        "n_judgments": int(len(judgments)),
        "n_unparseable": {j: int(n) for j, n in
                          judgments.assign(u=judgments.verdict == "unparseable").groupby("judge")["u"].sum().items()},
        # generative judges: outputs that quoted a verdict tag (from a response, or in quotes)
        "n_quoting": ({j: int(n) for j, n in judgments.assign(q=judgments["quoted_tags"].fillna(0) > 0)
                       .groupby("judge")["q"].sum().items()} if "quoted_tags" in judgments else {}),
        # the share of (judge, pair) verdicts consistent across orders; CI resampling prompts
        "position_consistency": {"estimate": consistent.estimate, "ci_low": consistent.ci_low,
                                 "ci_high": consistent.ci_high, "n": int(len(same)),
                                 "n_prompts": consistent.n},
        "pls_by_tier": {r.tier: _fig(r) for r in pls[pls.scope == "tier"].itertuples()},
        "pls_by_tier_method": {f"{r.tier}/{r.method}": _fig(r)
                               for r in pls[pls.scope == "method"].itertuples()},
    }
    by_task = pls_by_task(params, judgments, prompts)
    summary["pls_by_task_type"] = {f"{r.group}/{r.tier}": _fig(r)
                                   for r in by_task[by_task.scope == "task_type"].itertuples()}
    return wr, pls, summary, by_task


def pls_by_task(params: Params, judgments: pd.DataFrame, prompts: pd.DataFrame) -> pd.DataFrame:
    """PLS per tier on the prompts of each category and of each task type."""
    from judgeaudit.audits.leakage import leakage_by_task

    a = params.audit
    return leakage_by_task(pair_scores(judgments), prompts.set_index("prompt_id")["category"],
                           params.judge_roster(), n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)


def _fig(row) -> dict:
    return {"estimate": row.estimate, "ci_low": row.ci_low, "ci_high": row.ci_high, "n": int(row.n)}


log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    wr, pls, summary, by_task = leakage_audit(params, tables["judgments"], tables["prompts"])
    publish(wr, "win_rates", "audit", layout.metrics / "win_rates.parquet", layout)
    publish(pls, "pls", "audit", layout.metrics / "pls.parquet", layout)
    write(by_task, layout.metrics / "pls_by_task.parquet")
    write_json(summary, layout.metrics / "summary.json")
    write_paper_rows(audit_paper_rows(summary, setting_of(params)), layout.metrics)
    log.info("PLS by tier: %s", summary["pls_by_tier"])
    return summary
