"""Stage ``boat``: vanilla vs BOAT accuracy of a clean model, and of the same model
after fine-tuning on the test items (the contamination check)."""

from __future__ import annotations

import pandas as pd

from judgeaudit.audits.boat_eval import boat_runs, boat_summary
from judgeaudit.config import Params
from judgeaudit.generation.mcq import make_mcqs
from judgeaudit.models import load_model
from judgeaudit.pipeline.layout import Layout
from judgeaudit.training.trainers import sft


def boat_stage(params: Params, layout: Layout) -> tuple[pd.DataFrame, dict]:
    """(per-item results of every run, summary) for the clean and contaminated model."""
    cfg = params.boat
    cats = tuple(params.corpus.categories)
    items = make_mcqs(cfg.n_items, params.seed + 5, cats)
    pool = make_mcqs(max(cfg.shots * 10, 20), params.seed + 6, cats)  # few-shot examples
    spec = params.spec_for(cfg.model, layout.models)
    kw = dict(runs=cfg.runs, shots=cfg.shots, shot_pool=pool, seed=params.seed)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    clean = load_model(spec, name=cfg.model)
    results = {"clean": boat_runs(clean, items, **kw)}
    out = layout.boat / "contaminated"
    rows = [{"prompt": clean.format_prompt(item.render()), "completion": " " + item.gold} for item in items]
    sft(spec.path, spec.path, rows, out, cfg.contaminate, params.seed, spec.max_length)
    contaminated = load_model(spec.model_copy(update={"path": str(out)}), name=f"{cfg.model}+test-set")
    results["contaminated"] = boat_runs(contaminated, items, **kw)
    summary = {name: boat_summary(res, **stats) for name, res in results.items()}
    table = pd.concat([res.assign(model=name) for name, res in results.items()], ignore_index=True)
    return table, summary
