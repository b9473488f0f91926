"""Stage ``judge``: every judge compares every pair of students, in both orders; its
shards (``scale.shards_per_judge`` per judge) in turn in the stage's process, or over a
Dask cluster (params.yaml ``scale``). The table's row order is one however it was sharded."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit import resolve
from judgeaudit.config import Params
from judgeaudit.judging import student_pairs
from judgeaudit.judging.student_pairs import comparisons
from judgeaudit.layout import Layout
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool

# scale.shards_per_judge (handed to every stage, tracked by none) cuts the pairs for the pool,
# not what is judged: the table is sorted into one order below
STAGE = Stage(name="judge", params=(*MODELS, "leakage", "judge"),
              deps=("responses", "models"), outs=("judgments",), reads=("responses",), gpu=True)

# one row order for the judgments table, however the judging was sharded
JUDGMENT_ORDER = ["judge", "method", "student_base", "generator_a", "generator_b", "prompt_id", "order"]


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> int:
    pairs = comparisons(tables["responses"], params.leakage.generators)
    shards = np.array_split(np.arange(len(pairs)), min(params.scale.shards_per_judge, len(pairs)))
    futures = [pool.submit(student_pairs.judge_pairs, judge=j, pairs=pairs.iloc[idx].reset_index(drop=True),
                           settings=params.judge, seed=params.seed)
               for j in resolve.judges(params, layout.models) for idx in shards]
    frames = [future.result() for future in futures]
    judgments = pd.concat(frames, ignore_index=True).sort_values(JUDGMENT_ORDER, kind="stable",
                                                                 ignore_index=True)
    return len(publish(judgments, "judgments", "judge", layout.judgments, layout))
