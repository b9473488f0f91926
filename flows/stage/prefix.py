"""Stage ``prefix``: reward-model prefix bias per preference source and base."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import publish, unconfigured
from judgeaudit.config import Params, load_params
from judgeaudit.pipeline import prefix
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "prefix", *MODELS), output="out", artifacts="rm-*"),
      **LOAD)
def prefix_audit(params: Params, base_dir: Path, out: Path) -> tuple[pd.DataFrame, dict]:
    """``out``: the folder the reward models are written to."""
    return prefix.prefix_stage(params, Layout(out.parent))


@flow(name="prefix")
def prefix_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Reward-model prefix bias per preference source and base: zero-shot, baseline, and
    per-group augmentation audited on its group (aug) and the others (aug-gen)."""
    params, layout = load_params(params_path), Layout(Path(root))
    if unconfigured(params.prefix, layout.prefix):
        return {}
    base_dir = Path(params.spec_for(params.prefix.base, layout.models).path)
    matrices, summary = prefix_audit(params, base_dir, layout.prefix)
    publish(matrices, "prefix_matrices", "prefix", layout.prefix / "matrices.parquet", layout)
    write_json(summary, layout.prefix / "summary.json")
    return {f"{r['source']}/{r['base']}/{r['variant']}/{r['trained_group']}/{r['group']}": round(r["alpha_bar"], 3)
            for r in summary["rows"]}
