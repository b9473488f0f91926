"""Stage ``prefix``: reward-model prefix bias per preference source and base: zero-shot,
baseline, and per-group augmentation audited on its group (aug) and the others (aug-gen).
Each (source, base) is one unit over the stage's worker processes, the longest first; the
tables keep the params' order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import prefix
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="prefix",
    params=(*MODELS, "audit", "prefix"),
    deps=("models",),
    outs=("prefix",),
    section="prefix",
    pool=True,
)


def prefix_unit(params: Params, source: str, base: str, models_dir: Path,
                out: Path) -> tuple[pd.DataFrame, list[dict]]:
    """One (source, base): its matrices and summary rows; its reward models written under ``out``."""
    return prefix.prefix_unit(params, source, base, models_dir, out)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.prefix.mkdir(parents=True, exist_ok=True)
    units = prefix.prefix_units(params)
    # the longest first: the two workers then finish together (the tables keep params order)
    longest = sorted(units, key=lambda u: -prefix.unit_cost(params, *u, layout.models))
    futures = {(source, base): pool.submit(prefix_unit, params=params, source=source, base=base,
                                           models_dir=layout.models,
                                           out=layout.prefix / f"rm-{source}-{base}")
               for source, base in longest}
    matrices, summary = prefix.prefix_summary(params, [futures[u].result() for u in units])
    keep = {f"rm-{source}-{base}" for source, base in units}
    for stale in layout.prefix.glob("rm-*"):  # reward models of an earlier config or layout
        if stale.is_dir() and stale.name not in keep:
            shutil.rmtree(stale)
    publish(matrices, "prefix_matrices", "prefix", layout.prefix / "matrices.parquet", layout)
    write_json(summary, layout.prefix / "summary.json")
    return {f"{r['source']}/{r['base']}/{r['variant']}/{r['trained_group']}/{r['group']}":
            round(r["alpha_bar"], 3) for r in summary["rows"]}
