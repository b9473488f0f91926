"""Stage ``boat``: vanilla vs BOAT accuracy, clean and after training on the test items."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import publish, unconfigured
from judgeaudit.config import Params, load_params
from judgeaudit.pipeline import boat
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "boat", "judge", "leakage", *MODELS), output="out"), **LOAD)
def boat_audit(params: Params, model_dir: Path, out: Path) -> tuple[pd.DataFrame, dict]:
    """``out``: where the contaminated model is written. ``judge`` and ``leakage``: the
    agents-as-evaluator probe asks every judge of the roster."""
    return boat.boat_stage(params, Layout(out.parent.parent))


@flow(name="boat")
def boat_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Vanilla vs BOAT accuracy, clean and after training on the test items."""
    params, layout = load_params(params_path), Layout(Path(root))
    if unconfigured(params.boat, layout.boat):
        return {}
    model_dir = Path(params.spec_for(params.boat.model, layout.models).path)
    results, summary = boat_audit(params, model_dir, layout.boat / "contaminated")
    publish(results, "boat_results", "boat", layout.boat / "results.parquet", layout)
    write_json(summary, layout.boat / "summary.json")
    return {name: {k: round(summary[name][k]["accuracy"], 3) for k in ("vanilla", "boat")}
            for name in ("clean", "contaminated")}
