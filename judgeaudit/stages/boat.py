"""Stage ``boat``: vanilla vs BOAT accuracy, clean and after training on the test items, and
the agents-as-evaluator probe. The contamination (fine-tuning) runs first, alone in the
stage's process; then each model's evaluation per benchmark and the probe side by side over
the stage's worker processes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import boat
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="boat",
    params=(*MODELS, "leakage", "judge", "audit", "boat"),
    deps=("models",),
    outs=("boat",),
    section="boat",
    pool=True,
    metrics=("boat/summary.json",),
)


def boat_evaluate(params: Params, layout: Layout, benchmark: str, model: str,
                  weights: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """``model`` ("clean" or "contaminated", whose weights are ``weights``) on one benchmark."""
    return boat.evaluate(params, layout, benchmark, weights if model == "contaminated" else None)


def boat_probe(params: Params, layout: Layout) -> dict:
    """The agents-as-evaluator probe: every judge of the roster asked."""
    return boat.agent_probe(params, layout)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.boat.mkdir(parents=True, exist_ok=True)
    model_dir = Path(params.spec_for(params.boat.model, layout.models).path)
    out, (names, notes) = layout.boat / "contaminated", boat.benchmarks(params)
    # training runs first, alone on every core (on one thread, beside the evaluations, it took
    # longer); then the evaluations and the probe side by side, the longest first (the probe,
    # the real benchmarks' few-shot prompts, the generated items' zero-shot ones), so that the
    # workers finish together
    boat.contaminate(params, layout, out)
    evaluations = [(model, weights, b) for model, weights in (("clean", model_dir), ("contaminated", out))
                   for b in names]
    probe = pool.submit(boat_probe, params=params, layout=layout)
    parts = {(model, b): pool.submit(boat_evaluate, params=params, layout=layout, benchmark=b, model=model,
                                     weights=weights)
             for model, weights, b in sorted(evaluations, key=lambda e: e[2] == "generated")}
    evaluated = {(model, b): parts[model, b].result() for model, _, b in evaluations}  # the tables' order
    results, summary = boat.boat_tables(params, evaluated, notes, probe.result())
    publish(results, "boat_results", "boat", layout.boat / "results.parquet", layout)
    write_json(summary, layout.boat / "summary.json")
    return {name: {k: round(summary[name][k]["accuracy"], 3) for k in ("vanilla", "boat")}
            for name in ("clean", "contaminated")}
