"""Stage ``boat``: vanilla vs BOAT accuracy, clean and after training on the test items.
The contamination (fine-tuning) first, then each model's evaluation per benchmark and the
agents probe side by side on the stage's worker processes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import flow, task

from flows.common import load_params, publish, unconfigured
from flows.runners import parallel
from judgeaudit.config import Params
from judgeaudit.pipeline import boat
from judgeaudit.layout import Layout
from judgeaudit.tables import write_json
from tasks.cache import LOAD, MODELS, artifact_cache

SECTIONS = ("seed", "corpus", "audit", "boat", *MODELS)


@task(cache_policy=artifact_cache(SECTIONS, output="out"), **LOAD)
def boat_contaminate(params: Params, model_dir: Path, out: Path, root: str) -> str:
    """``model_dir``: the clean model's weights, whose content keys the cache; ``out``:
    where the contaminated model is written."""
    return str(boat.contaminate(params, Layout(Path(root)), out))


@task(cache_policy=artifact_cache(SECTIONS), task_run_name="boat-{model}-{benchmark}", **LOAD)
def boat_evaluate(params: Params, benchmark: str, model: str, weights: Path,
                  root: str) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """``weights``: the evaluated model's (clean or contaminated), whose content keys the cache."""
    return boat.evaluate(params, Layout(Path(root)), benchmark, weights if model == "contaminated" else None)


@task(cache_policy=artifact_cache((*SECTIONS, "judge", "leakage")), **LOAD)
def boat_probe(params: Params, models_dir: Path, root: str) -> dict:
    """The agents-as-evaluator probe; ``judge`` and ``leakage``: it asks every judge of the
    roster, whose weights (``models_dir``) key the cache."""
    return boat.agent_probe(params, Layout(Path(root)))


@flow(name="boat")
def boat_flow(params_path: str = "params.yaml", root: str = "data") -> dict:
    """Vanilla vs BOAT accuracy, clean and after training on the test items."""
    params, layout = load_params(params_path), Layout(Path(root))
    if unconfigured(params.boat, layout.boat):
        return {}
    model_dir = Path(params.spec_for(params.boat.model, layout.models).path)
    out, (names, notes) = layout.boat / "contaminated", boat.benchmarks(params)
    common = dict(params=params, root=str(layout.root))
    # training runs first, alone on every core (one torch thread took it about 1.5x longer
    # here, and beside the evaluations longer still); then the evaluations and the probe, side
    # by side, the longest first: the probe (17 s here), the real benchmarks' few-shot prompts
    # (10-12 s each), the generated items' zero-shot ones (3-4 s); 3 s sooner than in turn
    boat_contaminate(model_dir=model_dir, out=out, **common)
    evaluations = [(model, weights, b) for model, weights in (("clean", model_dir), ("contaminated", out))
                   for b in names]
    with parallel(params.scale) as runner:
        probe = runner.submit(boat_probe, dict(models_dir=layout.models, **common))
        parts = {(model, b): runner.submit(boat_evaluate, dict(benchmark=b, model=model, weights=weights, **common))
                 for model, weights, b in sorted(evaluations, key=lambda e: e[2] == "generated")}
        evaluated = {(model, b): parts[model, b].result() for model, _, b in evaluations}  # the tables' order
        results, summary = boat.boat_tables(params, evaluated, notes, probe.result())
    publish(results, "boat_results", "boat", layout.boat / "results.parquet", layout)
    write_json(summary, layout.boat / "summary.json")
    return {name: {k: round(summary[name][k]["accuracy"], 3) for k in ("vanilla", "boat")}
            for name in ("clean", "contaminated")}
