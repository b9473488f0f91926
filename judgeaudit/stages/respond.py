"""Stage ``respond``: the students answer the held-out eval prompts, in turn in the stage's
process."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, upstream
from judgeaudit.stagekit.pool import Pool
from judgeaudit.training import students

STAGE = Stage(name="respond", params=(*MODELS, "generate", "train"),
              deps=("models", "students", "prompts", "synthetic"), outs=("responses",),
              reads=("prompts", "synthetic"), gpu=True)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> int:
    prompts, synthetic = tables["prompts"], tables["synthetic"]
    index = upstream(layout.student_index, "student_index", layout, ("student_id", "path", "method"))
    frames = [students.respond(s, params.spec_for(s["student_base"], layout.models), prompts, synthetic,
                               layout, params.generate.max_new_tokens, params.seed)
              for s in pool.each(index.to_dict("records"))]
    return len(publish(frames, "responses", "respond", layout.responses, layout))
