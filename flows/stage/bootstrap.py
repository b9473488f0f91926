"""Stage ``bootstrap``: the prompt table, the tokenizer and the embedded models."""

from __future__ import annotations

import queue
from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params
from flows.runners import parallel
from tasks.io import validate, write
from judgeaudit.config import Params
from judgeaudit.pipeline import bootstrap, prompts
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache


@task(cache_policy=artifact_cache(("seed", "corpus")), persist_result=True)
def make_prompts(params: Params) -> pd.DataFrame:
    return prompts.make_prompts(params)


@task(cache_policy=artifact_cache(MODELS, output="out"), **LOAD)
def build_tokenizer(params: Params, out: Path) -> str:
    return str(bootstrap.build_tokenizer(params, Layout(out.parent.parent)))


@task(cache_policy=artifact_cache(MODELS, output="out"), task_run_name="build-{name}", **LOAD)
def build_model(params: Params, name: str, out: Path, depends_on: Path) -> dict:
    """``depends_on``: the tokenizer, or the parent model, whose content keys the cache."""
    return bootstrap.build_model(params, name, Layout(out.parent.parent))


@flow(name="bootstrap")
def bootstrap_flow(params_path: str = "params.yaml", root: str = "data") -> list[dict]:
    """Prompt table, tokenizer and the embedded models (real checkpoints are left as they are)."""
    params, layout = load_params(params_path), Layout(Path(root))
    prompts = validate(make_prompts(params), "prompts", "bootstrap", layout.quarantine)
    built = [n for n, m in params.models.items() if m.build is not None]
    summaries = []
    if built:
        tok = Path(build_tokenizer(params, layout.tokenizer))
        done: dict[str, dict] = {}
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def submit(runner, names: list[str]) -> dict:
            running = {}
            for name in sorted(names, key=lambda n: -bootstrap.build_cost(params, n)):  # longest first
                parent = params.models[name].build.init_from
                future = runner.submit(build_model, dict(params=params, name=name, out=layout.models / name,
                                                         depends_on=layout.models / parent if parent else tok))
                future.add_done_callback(finished.put)
                running[future] = name
            return running

        with parallel(params.scale) as runner:
            # each model as soon as its parent is built (not a wave at a time), the longest first
            running = submit(runner, [n for n in built if params.models[n].build.init_from not in built])
            while running:
                future = finished.get()
                done[running.pop(future)] = future.result()
                running |= submit(runner, [n for n in built if n not in done and n not in running.values()
                                           and params.models[n].build.init_from in done])
        summaries = [done[n] for n in built]  # params order, as before
    write(prompts, layout.prompts)
    write_json(summaries, layout.models / "_summary.json")
    return summaries
