"""Stage ``train``: the students, each base x each generator's data x each method (SFT,
DPO, ICL), over the stage's worker processes, the longest first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.training import students as training
from judgeaudit.training.students import StudentSettings

STAGE = Stage(name="train",
              params=(*MODELS, "train", "leakage.generators", "leakage.methods", "leakage.students"),
              deps=("synthetic", "models"), outs=("students",), reads=("synthetic",), pool=True, gpu=True)

# a method's training per byte of weights, to start the longest first (in turn, the largest
# base's DPO students came last): DPO scores the policy and the reference on both answers,
# so it costs more than SFT; ICL trains nothing
_COST = {"dpo": 1.5, "sft": 1.0, "icl": 0.0}


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> int:
    synthetic = tables["synthetic"]
    layout.students.mkdir(parents=True, exist_ok=True)
    layout.student_index.unlink(missing_ok=True)  # no index until every student is done
    specs = {base: params.spec_for(base, layout.models) for base in params.leakage.students}
    settings = StudentSettings(params.train, params.embedded.template, params.seed)
    students = [(base, gen, method) for base in params.leakage.students for gen in params.leakage.generators
                for method in params.leakage.methods]
    longest_first = sorted(students, key=lambda s: -specs[s[0]].weight_bytes * _COST[s[2]])
    futures = {(base, gen, method): pool.submit(training.train_student, base=base, spec=specs[base],
                                                generator=gen, method=method, synthetic=synthetic,
                                                layout=layout, settings=settings)
               for base, gen, method in longest_first}
    rows = [futures[student].result() for student in students]  # the index's order
    keep = {Path(layout.from_stored(r["path"])).name for r in rows} | {layout.student_index.name}
    for stale in layout.students.iterdir():  # students of an earlier config
        if stale.name not in keep and stale.is_dir():
            shutil.rmtree(stale)
    write(pd.DataFrame(rows), layout.student_index)
    return len(rows)
