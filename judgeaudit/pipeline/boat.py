"""Stage ``boat``: vanilla vs BOAT accuracy of a clean model, and of the same model
after fine-tuning on the test items (the contamination check), on generated items and
on real MMLU / GSM8K items where ../shared/data holds them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit.audits.agent_probe import (PROMPT_TEMPLATE, boat_rephrase, confidences, model_rephrase, probe_rates,
                                          probe_table, rewriter_errors, rule_rephrase, self_preference)
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.audits.boat_eval import boat_runs, boat_summary, single_effects, single_runs
from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.mcq import make_mcqs
from judgeaudit.models import load_model
from judgeaudit.judging.student_pairs import unique_roster
from judgeaudit.layout import Layout
from judgeaudit.sources.mcq_benchmarks import RealItems, read_gsm8k, read_mmlu
from judgeaudit.training.trainers import sft


def agent_probe(params: Params, layout: Layout) -> dict:
    """The agents-as-evaluator probe: items rewritten by the rule rewriter, by each
    configured agent and by BOAT, at every strength; every judge of the roster rates
    whether the original label still holds. Tables: rewriters (label moved / label
    error), rates (over-/under-confidence, error; consensus), self_preference."""
    cfg, cats = params.boat.probe, tuple(params.corpus.categories)
    items = make_items(cfg.n_items, params.seed + 8, "r", cats)
    mcqs = make_mcqs(cfg.n_items, params.seed + 9, cats)
    def model(name: str):
        return load_model(params.spec_for(name, layout.models), name=name)

    judges = {e["judge"]: model(e["judge"]) for e in unique_roster(params)}
    agents = [judges.get(name) or model(name) for name in cfg.agents]
    probes = []
    for k, strength in enumerate(cfg.strengths):
        probes += rule_rephrase(items, params.seed + k, strength)
        for agent in agents:
            probes += model_rephrase(agent, items, strength, params.seed + k, mode=cfg.mode,
                                     template=cfg.template or PROMPT_TEMPLATE, max_new_tokens=cfg.max_new_tokens)
        probes += boat_rephrase(mcqs, strength, params.seed + k)
    table = probe_table(probes, {name: confidences(judge, probes, params.judge.modes.get(name, params.judge.mode))
                                 for name, judge in judges.items()})
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    return {"rewriters": rewriter_errors(table, **stats).to_dict("records"),
            "rates": probe_rates(table, **stats).to_dict("records"),
            "self_preference": self_preference(table, settings=BootstrapSettings(**stats)).to_dict("records"),
            "agents": list(cfg.agents), "mode": cfg.mode, "n_items": cfg.n_items}


def real_benchmarks(params: Params) -> tuple[dict[str, RealItems], dict[str, str]]:
    """The real benchmarks configured and present, and a note for each (absent: skipped)."""
    real = params.boat.real
    found: dict[str, RealItems] = {}
    notes: dict[str, str] = {}
    if real is None:
        return found, notes
    for name, path, reader in (("mmlu", real.mmlu, read_mmlu), ("gsm8k", real.gsm8k, read_gsm8k)):
        if path is None:
            continue
        if not Path(path).exists():
            notes[name] = f"skipped: no {name} data at {path} (see ../shared/data/SOURCES.md)"
            continue
        found[name] = reader(path, real.n_items, params.seed + 7)
        notes[name] = found[name].note
    return found, notes


def boat_stage(params: Params, layout: Layout) -> tuple[pd.DataFrame, dict]:
    """(per-item results of every run, summary) for the clean and the contaminated model,
    on the generated items and on each real benchmark: vanilla vs BOAT over runs, and each
    intervention alone. The contaminated model is fine-tuned on every benchmark's test items."""
    cfg = params.boat
    cats = tuple(params.corpus.categories)
    benchmarks = {"generated": (make_mcqs(cfg.n_items, params.seed + 5, cats),
                                make_mcqs(max(cfg.shots * 10, 20), params.seed + 6, cats), cfg.shots, cfg.runs)}
    real, notes = real_benchmarks(params)
    for name, found in real.items():
        benchmarks[name] = (found.items, found.shot_pools, params.boat.real.shots, params.boat.real.runs)
    spec = params.spec_for(cfg.model, layout.models)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    clean = load_model(spec, name=cfg.model)
    rows = [{"prompt": clean.format_prompt(item.render()), "completion": " " + item.gold}
            for items, *_ in benchmarks.values() for item in items]
    out = layout.boat / "contaminated"
    sft(spec.path, spec.path, rows, out, cfg.contaminate, params.seed, spec.max_length)
    models = {"clean": clean,
              "contaminated": load_model(spec.model_copy(update={"path": str(out)}), name=f"{cfg.model}+test-set")}
    tables, single, summary = [], [], {}
    for bench, (items, pool, shots, runs) in benchmarks.items():
        kw = dict(runs=runs, shots=shots, shot_pool=pool, seed=params.seed)
        for name, model in models.items():
            res = boat_runs(model, items, **kw)
            alone = single_runs(model, items, **kw)
            tables.append(res.assign(model=name, benchmark=bench))
            single.append(single_effects(alone, res, **stats).assign(model=name, benchmark=bench))
            target = summary if bench == "generated" else summary.setdefault("real", {}).setdefault(bench, {})
            target[name] = boat_summary(res, **stats)
    summary["single"] = pd.concat(single, ignore_index=True).to_dict("records")
    summary["sources"] = {"generated": f"{cfg.n_items} template items, {cfg.shots}-shot", **notes}
    summary["probe"] = agent_probe(params, layout)
    return pd.concat(tables, ignore_index=True), summary
