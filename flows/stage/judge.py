"""Stage ``judge``: every judge compares every pair of students, in both orders,
in-process or sharded over a Dask cluster (params.yaml ``scale``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, read
from flows.runners import results, task_runner
from judgeaudit.config import Params
from judgeaudit import resolve
from judgeaudit.judging import student_pairs
from judgeaudit.judging.student_pairs import RosterJudge, comparisons
from judgeaudit.layout import Layout
from tasks.cache import LOAD, MODELS, artifact_cache

# params the flow reads beside its tasks' cache keys (the roster and the student pairs it judges);
# with those: dvc.yaml's params (`judgeaudit deps --write`)
PARAMS = ("leakage",)
# one row order for the judgments table, however the judging was sharded
JUDGMENT_ORDER = ["judge", "method", "student_base", "generator_a", "generator_b", "prompt_id", "order"]


@task(cache_policy=artifact_cache((*MODELS, "judge")), task_run_name="judge-{judge.name}", **LOAD)
def judge_pairs(params: Params, judge: RosterJudge, pairs: pd.DataFrame, judge_dir: Path) -> pd.DataFrame:
    """``judge`` (resolved at the flow's door) on ``pairs``; ``judge_dir``: its weights,
    whose content keys the cache."""
    return student_pairs.judge_pairs(judge, pairs, params.judge, params.seed)


@flow(name="judge-shards")
def judge_shards(params_path: str, root: str, pairs: pd.DataFrame) -> list[pd.DataFrame]:
    """Every judge on every shard of ``pairs``, submitted to the flow's task runner."""
    params, layout = load_params(params_path), Layout(Path(root))
    shards = np.array_split(np.arange(len(pairs)), min(params.scale.shards_per_judge, len(pairs)))
    futures = [judge_pairs.submit(params, j, pairs.iloc[idx].reset_index(drop=True), Path(j.spec.path))
               for j in resolve.judges(params, layout.models) for idx in shards]
    return results(futures)


@flow(name="judge")
def judge_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Every judge, every pair of students, both presentation orders; in-process, or
    sharded over a Dask cluster when params.yaml's ``scale`` says so."""
    params, layout = load_params(params_path), Layout(Path(root))
    responses = read(layout.responses, "responses", layout)
    pairs = comparisons(responses, params.leakage.generators)
    frames = judge_shards.with_options(task_runner=task_runner(params.scale))(params_path, str(layout.root), pairs)
    judgments = pd.concat(frames, ignore_index=True).sort_values(JUDGMENT_ORDER, kind="stable", ignore_index=True)
    return len(publish(judgments, "judgments", "judge", layout.judgments, layout))
