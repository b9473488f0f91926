"""Stage ``generate``: each generator answers the training prompts (the synthetic data),
in turn in the stage's process."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import generate
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool

STAGE = Stage(name="generate", params=(*MODELS, "generate", "leakage.generators"), deps=("prompts", "models"),
              outs=("synthetic",), reads=("prompts",))


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> int:
    frames = [generate.generate_answers(params, g, tables["prompts"], layout)
              for g in pool.each(params.leakage.generators)]
    return len(publish(frames, "synthetic", "generate", layout.synthetic, layout))
