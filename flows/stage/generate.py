"""Stage ``generate``: each generator answers the training prompts (the synthetic data)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, read
from flows.runners import tracked
from judgeaudit.config import Params
from judgeaudit.pipeline import generate
from judgeaudit.layout import Layout
from tasks.cache import LOAD, MODELS, artifact_cache


# params the flow reads beside its tasks' cache keys (the generators it runs);
# with those: dvc.yaml's params (`judgeaudit deps --write`)
PARAMS = ("leakage.generators",)


@task(cache_policy=artifact_cache((*MODELS, "generate")), task_run_name="generate-{generator}", **LOAD)
def generate_answers(params: Params, generator: str, prompts: pd.DataFrame, model_dir: Path,
                     root: str) -> pd.DataFrame:
    """``model_dir``: the generator's weights, whose content keys the cache."""
    return generate.generate_answers(params, generator, prompts, Layout(Path(root)))


@flow(name="generate")
def generate_flow(params_path: str = "params.yaml", root: str = "data") -> int:
    """Each generator answers the training prompts."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = read(layout.prompts, "prompts", layout)
    frames = [generate_answers(params, g, prompts, Path(params.spec_for(g, layout.models).path), str(layout.root))
              for g in tracked(params.leakage.generators)]
    return len(publish(frames, "synthetic", "generate", layout.synthetic, layout))
