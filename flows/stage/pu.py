"""Stage ``pu``: the PU audit of the embedded judges on known-quality pairs, clean and under attack."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, unconfigured
from flows.runners import parallel
from judgeaudit.config import Params
from judgeaudit.pipeline import pu_default
from judgeaudit.layout import Layout
from judgeaudit.pipeline.pu_default import attack_flip_rates
from judgeaudit.report.pu_report import default_plots
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache
from tasks.io import write


@task(cache_policy=artifact_cache(("seed", "corpus", "audit", "pu", "judge", "leakage", "attacks", *MODELS)),
      **LOAD)
def pu_audit(params: Params, models_dir: Path, root: str, judges: list[str]) -> tuple[pd.DataFrame, ...]:
    """The stage's tables for ``judges``; ``models_dir``: the judges and encoders, whose
    content keys the cache."""
    return pu_default.pu_stage(params, Layout(Path(root)), judges)


@flow(name="pu")
def pu_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """PU audit of the embedded judges on known-quality pairs, clean and under attack."""
    params, layout = load_params(params_path), Layout(Path(root))
    if unconfigured(params.pu, layout.pu):
        return {}
    groups = pu_default.judge_groups(params, layout, params.scale.processes)
    with parallel(params.scale) as runner:  # the judges in groups, side by side
        futures = [runner.submit(pu_audit, dict(params=params, models_dir=layout.models, root=str(layout.root),
                                                judges=group)) for group in groups]
        parts = [f.result() for f in futures]
    table, verdicts, items, sens, encoders = pu_default.merge_parts(parts, params, layout)
    table = publish(table, "pu_consistency", "pu", layout.pu / "consistency.parquet", layout)
    for frame, name in ((verdicts, "verdicts"), (items, "items"), (sens, "sensitivity"), (encoders, "encoders")):
        write(frame, layout.pu / f"{name}.parquet")
    a = params.audit
    flips = attack_flip_rates(verdicts, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    overall = table[table.qtype == "all"]
    plots = default_plots(table, items, sens, params.pu.eta, layout.pu)
    summary = {"consistency": overall.to_dict("records"), "attack_flip_rates": flips.to_dict("records"),
               "sensitivity": sens.to_dict("records"), "encoders": encoders.to_dict("records"),
               "plots": {k: v.name for k, v in plots.items()}}
    write_json(summary, layout.pu / "summary.json")
    return {"judges": int(overall.judge.nunique()), "conditions": sorted(set(overall.condition))}
