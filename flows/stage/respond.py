"""Stage ``respond``: the students answer the held-out eval prompts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, read, upstream
from flows.runners import tracked
from judgeaudit.config import Params
from judgeaudit.training import students
from judgeaudit.layout import Layout
from tasks.cache import LOAD, MODELS, artifact_cache


@task(cache_policy=artifact_cache((*MODELS, "train", "generate")), task_run_name="respond-{student[student_id]}",
      **LOAD)
def respond(params: Params, student: dict, prompts: pd.DataFrame, synthetic: pd.DataFrame,
            student_dir: Path, root: str) -> pd.DataFrame:
    """``student_dir``: the student's weights, whose content keys the cache."""
    layout = Layout(Path(root))
    return students.respond(student, params.spec_for(student["student_base"], layout.models), prompts, synthetic,
                            layout, params.generate.max_new_tokens, params.seed)


@flow(name="respond")
def respond_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Students answer the held-out eval prompts."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = read(layout.prompts, "prompts", layout)
    synthetic = read(layout.synthetic, "synthetic", layout)
    index = upstream(layout.student_index, "student_index", layout, ("student_id", "path", "method"))
    frames = [respond(params, s, prompts, synthetic, Path(layout.from_stored(s["path"])), str(layout.root))
              for s in tracked(index.to_dict("records"))]
    return len(publish(frames, "responses", "respond", layout.responses, layout))
