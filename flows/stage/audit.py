"""Stage ``audit``: win rates and the Preference Leakage Score, with bootstrap CIs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, get_run_logger, task

from flows.common import load_params, publish, read
from judgeaudit.config import Params
from judgeaudit.pipeline import audit
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import artifact_cache
from tasks.io import write


@task(cache_policy=artifact_cache(("seed", "audit", "leakage")), persist_result=True)
def leakage_audit(params: Params, judgments: pd.DataFrame, prompts: pd.DataFrame
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    return audit.leakage_audit(params, judgments, prompts)


@flow(name="audit")
def audit_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Win rates and PLS, with bootstrap CIs."""
    params, layout = load_params(params_path), Layout(Path(root))
    judgments = read(layout.judgments, "judgments", layout)
    prompts = read(layout.prompts, "prompts", layout)
    wr, pls, summary, by_task = leakage_audit(params, judgments, prompts)
    publish(wr, "win_rates", "audit", layout.metrics / "win_rates.parquet", layout)
    publish(pls, "pls", "audit", layout.metrics / "pls.parquet", layout)
    write(by_task, layout.metrics / "pls_by_task.parquet")
    write_json(summary, layout.metrics / "summary.json")
    get_run_logger().info("PLS by tier: %s", summary["pls_by_tier"])
    return summary
