"""Stage ``prefix``: reward-model prefix bias per preference source and base."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, unconfigured
from flows.runners import parallel
from judgeaudit.config import Params
from judgeaudit.pipeline import prefix
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "prefix", *MODELS), output="out"),
      task_run_name="prefix-{source}-{base}", **LOAD)
def prefix_unit(params: Params, source: str, base: str, base_dir: Path, models_dir: Path,
                out: Path) -> tuple[pd.DataFrame, list[dict]]:
    """``base_dir``: the base's weights, whose content keys the cache; ``out``: the folder
    this unit's reward models are written to."""
    return prefix.prefix_unit(params, source, base, models_dir, out)


@flow(name="prefix")
def prefix_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Reward-model prefix bias per preference source and base: zero-shot, baseline, and
    per-group augmentation audited on its group (aug) and the others (aug-gen)."""
    params, layout = load_params(params_path), Layout(Path(root))
    if unconfigured(params.prefix, layout.prefix):
        return {}
    units = prefix.prefix_units(params)
    # the longest first: the two workers then finish together (the tables keep params order)
    longest = sorted(units, key=lambda u: -prefix.unit_cost(params, *u, layout.models))
    with parallel(params.scale) as runner:
        futures = {(source, base): runner.submit(prefix_unit, dict(
            params=params, source=source, base=base, base_dir=Path(params.spec_for(base, layout.models).path),
            models_dir=layout.models, out=layout.prefix / f"rm-{source}-{base}")) for source, base in longest}
        matrices, summary = prefix.prefix_summary(params, [futures[u].result() for u in units])
    keep = {f"rm-{source}-{base}" for source, base in units}
    for stale in layout.prefix.glob("rm-*"):  # reward models of an earlier config or layout
        if stale.is_dir() and stale.name not in keep:
            shutil.rmtree(stale)
    publish(matrices, "prefix_matrices", "prefix", layout.prefix / "matrices.parquet", layout)
    write_json(summary, layout.prefix / "summary.json")
    return {f"{r['source']}/{r['base']}/{r['variant']}/{r['trained_group']}/{r['group']}": round(r["alpha_bar"], 3)
            for r in summary["rows"]}
