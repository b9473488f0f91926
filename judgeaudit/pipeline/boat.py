"""Stage ``boat``: vanilla vs BOAT accuracy of a clean model, and of the same model
after fine-tuning on the test items (the contamination check)."""

from __future__ import annotations

import pandas as pd

from judgeaudit.audits.agent_probe import confidences, probe_rates, rule_rephrase
from judgeaudit.audits.boat_eval import boat_runs, boat_summary
from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.mcq import make_mcqs
from judgeaudit.models import load_model
from judgeaudit.pipeline.audit import unique_roster
from judgeaudit.pipeline.layout import Layout
from judgeaudit.training.trainers import sft


def agent_probe(params: Params, layout: Layout) -> pd.DataFrame:
    """Every judge rates rephrased eval-style items (half with the label broken)."""
    probes = rule_rephrase(make_items(params.boat.n_items, params.seed + 8, "r",
                                      tuple(params.corpus.categories)), params.seed)
    frames = []
    for entry in unique_roster(params):
        name = entry["judge"]
        judge = load_model(params.spec_for(name, layout.models), name=name)
        conf = confidences(judge, probes, params.judge.modes.get(name, params.judge.mode))
        frames.append(pd.DataFrame({"judge": name, "item_id": [p.item_id for p in probes],
                                    "holds": [p.holds for p in probes], "confidence": conf}))
    return probe_rates(pd.concat(frames, ignore_index=True), n_boot=params.audit.n_boot,
                       confidence=params.audit.confidence, seed=params.seed)


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
    summary["probe"] = agent_probe(params, layout).to_dict("records")
    table = pd.concat([res.assign(model=name) for name, res in results.items()], ignore_index=True)
    return table, summary
