"""Stage ``audit``: win rates and the Preference Leakage Score, with bootstrap CIs."""

from __future__ import annotations

import logging

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import audit
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(name="audit", params=("seed", "leakage", "audit"), deps=("judgments", "prompts"),
              outs=("metrics",), reads=("judgments", "prompts"), metrics=("metrics/summary.json",))

log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    wr, pls, summary, by_task = audit.leakage_audit(params, tables["judgments"], tables["prompts"])
    publish(wr, "win_rates", "audit", layout.metrics / "win_rates.parquet", layout)
    publish(pls, "pls", "audit", layout.metrics / "pls.parquet", layout)
    write(by_task, layout.metrics / "pls_by_task.parquet")
    write_json(summary, layout.metrics / "summary.json")
    log.info("PLS by tier: %s", summary["pls_by_tier"])
    return summary
