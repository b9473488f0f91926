"""Stage ``train``: students, each base x each generator's data x each method (SFT, DPO, ICL)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, read
from flows.runners import parallel
from tasks.io import write
from judgeaudit.config import Params
from judgeaudit.training import students
from judgeaudit.layout import Layout
from judgeaudit.training.students import StudentSettings, student_id
from tasks.cache import LOAD, MODELS, artifact_cache


# params the flow reads beside its tasks' cache keys (the students it trains);
# with those: dvc.yaml's params (`judgeaudit deps --write`)
PARAMS = ("leakage.generators", "leakage.students", "leakage.methods")


# a method's training per byte of weights, to start the longest first (in turn, the largest
# base's DPO students came last): DPO scores the policy and the reference on both answers
# (a DPO student took 1.3 to 1.6x an SFT one's time here), ICL trains nothing
_COST = {"dpo": 1.5, "sft": 1.0, "icl": 0.0}


@task(cache_policy=artifact_cache((*MODELS, "train"), output="out"), task_run_name="train-{out.name}", **LOAD)
def train_student(params: Params, base: str, generator: str, method: str, synthetic: pd.DataFrame,
                  base_dir: Path, out: Path) -> dict:
    """``base_dir``: the student base's weights, whose content keys the cache."""
    layout = Layout(out.parent.parent)
    return students.train_student(base, params.spec_for(base, layout.models), generator, method, synthetic, layout,
                                  StudentSettings(params.train, params.embedded.template, params.seed))


@flow(name="train")
def train_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Students: each base x each generator's data x each method (SFT, DPO, ICL)."""
    params, layout = load_params(params_path), Layout(Path(root))
    synthetic = read(layout.synthetic, "synthetic", layout)
    layout.students.mkdir(parents=True, exist_ok=True)
    layout.student_index.unlink(missing_ok=True)  # no index until every student is done
    specs = {base: params.spec_for(base, layout.models) for base in params.leakage.students}
    students = [(base, gen, method) for base in params.leakage.students for gen in params.leakage.generators
                for method in params.leakage.methods]
    with parallel(params.scale) as runner:
        futures = {(base, gen, method): runner.submit(train_student, dict(
            params=params, base=base, generator=gen, method=method, synthetic=synthetic,
            base_dir=Path(specs[base].path), out=layout.students / student_id(base, gen, method)))
            for base, gen, method in sorted(students, key=lambda s: -specs[s[0]].weight_bytes * _COST[s[2]])}
        rows = [futures[student].result() for student in students]  # the index's order
    keep = {Path(layout.from_stored(r["path"])).name for r in rows} | {layout.student_index.name}
    for stale in layout.students.iterdir():  # students of an earlier config
        if stale.name not in keep and stale.is_dir():
            shutil.rmtree(stale)
    write(pd.DataFrame(rows), layout.student_index)
    return len(rows)
