"""Stage ``real_judges``: recorded verdicts of real judges on public benchmarks: the report
card, the benchmarks' published figures recomputed, and the PU audit with its self-check.
Runs in the stage's process, its steps counted on the stage's bar."""

from __future__ import annotations

import logging

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import real_judges
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.pool import Pool

STAGE = Stage(
    name="real_judges",
    params=("seed", "audit.confidence", "real_judges"),
    outs=("real_judges",),
    section="real_judges",
)

log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "real_judges"
    out.mkdir(parents=True, exist_ok=True)
    # its inputs are files outside the project: DVC decides reruns from the params naming them
    result = real_judges.real_judges_stage(params, layout.root, steps=pool.bar)
    real_judges.write_audit(result, out, layout.quarantine)
    info = real_judges.summary(result)
    for note in result.notes:
        log.warning(note)
    return {"rows": info["rows"], "published_figures": info["published_figures"]}
