"""Stage ``pu``: the PU audit of the embedded judges on known-quality pairs, clean and under
attack. The roster's judges are dealt into groups of about equal work, one per worker
process, each group one unit; the groups' tables are merged in the roster's order."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import pu_default
from judgeaudit.pipeline.pu_default import attack_flip_rates
from judgeaudit.report.pu_report import default_plots
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="pu",
    params=(*MODELS, "leakage", "judge", "audit", "pu", "attacks"),
    deps=("models",),
    outs=("pu",),
    section="pu",
    pool=True,
)


def pu_audit(params: Params, layout: Layout, judges: list[str]) -> tuple[pd.DataFrame, ...]:
    """The stage's tables for ``judges``."""
    return pu_default.pu_stage(params, layout, judges)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.pu.mkdir(parents=True, exist_ok=True)
    # as many groups as the pool has workers (scale.processes)
    groups = pu_default.judge_groups(params, layout, pool.workers)
    futures = [pool.submit(pu_audit, params=params, layout=layout, judges=group) for group in groups]
    parts = [f.result() for f in futures]
    table, verdicts, items, sens, encoders = pu_default.merge_parts(parts, params, layout)
    table = publish(table, "pu_consistency", "pu", layout.pu / "consistency.parquet", layout)
    for frame, name in ((verdicts, "verdicts"), (items, "items"), (sens, "sensitivity"),
                        (encoders, "encoders")):
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
