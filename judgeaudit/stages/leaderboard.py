"""Stage ``leaderboard``: a real leaderboard's win rates from its judge's annotations: raw,
length- and style-controlled, Bradley-Terry CIs, separability, gamed entries, and the
judges' self-preference where their boards are configured. Runs in the stage's process,
its steps counted on the stage's bar."""

from __future__ import annotations

import logging

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline.leaderboard import leaderboard_stage
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.pool import Pool

STAGE = Stage(
    name="leaderboard",
    # it reads scale.processes too (handed to every stage, tracked by none): the processes of
    # the gamed-output evidence and the GLMs' fits, the same figures for any number
    params=("seed", "audit.confidence", "leaderboard"),
    outs=("leaderboard",),
    section="leaderboard",
    plots=(("leaderboard/self_preference.png", {}), ("leaderboard/raw_vs_controlled.png", {})),
)

log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "leaderboard"
    out.mkdir(parents=True, exist_ok=True)
    # its input is a folder outside the project: DVC decides reruns from the params naming it
    summary = leaderboard_stage(params, out, steps=pool.bar)
    for note in summary.get("notes", []):
        log.warning(note)
    return {"flagged": summary.get("flagged", []), "separability_bt": summary.get("separability_bt")}
