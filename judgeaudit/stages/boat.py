"""Stage ``boat``: vanilla vs BOAT accuracy, clean and after training on the test items, and
the agents-as-evaluator probe. The contamination (fine-tuning) runs first, alone in the
stage's process; then each model's evaluation per benchmark and the probe side by side over
the stage's worker processes.

The items are generated, and real MMLU / GSM8K items where ../shared/data holds them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit import resolve
from judgeaudit.audits.agent_consensus import category_accuracy, consensus_rates, subject_correlation
from judgeaudit.audits.agent_probe import (PROMPT_TEMPLATE, boat_rephrase, confidences, model_rephrase,
                                           probe_rates, probe_table, rated_scores, rewriter_errors,
                                           rule_rephrase, self_preference)
from judgeaudit.audits.boat_eval import boat_runs, boat_summary, open_prompt, single_effects, single_runs
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.mcq import make_mcqs
from judgeaudit.judging.student_pairs import load_judge
from judgeaudit.layout import Layout
from judgeaudit.models import load_model
from judgeaudit.report.boat_paper import boat_paper_rows
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.sources.mcq_benchmarks import RealItems, read_gsm8k, read_mmlu
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


def agent_probe(params: Params, layout: Layout) -> dict:
    """The agents-as-evaluator probe: items rewritten by the rule rewriter, by each
    configured agent and by BOAT, at every strength; every judge of the roster rates
    whether the original label still holds. Tables: rewriters (label moved / label
    error), rates (``rule`` paper: over-/under-confidence against the other judges' mean
    score, consensus error; majority: against their majority, error against the truth),
    self_preference, and the per-subject correlation of data bias and accuracy (table1)."""
    cfg, cats = params.boat.probe, tuple(params.corpus.categories)
    items = make_items(cfg.n_items, params.seed + 8, "r", cats)
    mcqs = make_mcqs(cfg.n_items, params.seed + 9, cats)
    # make_mcqs turns each of these items into one MCQ, in order: their subjects
    mcq_cats = [it.category for it in make_items(cfg.n_items, params.seed + 9, "q",
                                                 tuple(c for c in cats if c != "compare"))]
    def model(name: str):
        return load_model(params.spec_for(name, layout.models), name=name)

    roster = resolve.judges(params, layout.models)
    judges = {j.name: load_judge(j) for j in roster}
    agents = [judges.get(name) or model(name) for name in cfg.agents]
    probes = []
    for k, strength in enumerate(cfg.strengths):
        probes += rule_rephrase(items, params.seed + k, strength)
        for agent in agents:
            probes += model_rephrase(agent, items, strength, params.seed + k, mode=cfg.mode,
                                     template=cfg.template or PROMPT_TEMPLATE, max_new_tokens=cfg.max_new_tokens,
                                     strength_as=cfg.strength_as, share=cfg.share)
        probes += boat_rephrase(mcqs, strength, params.seed + k, cfg.strength_as)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    if cfg.rule == "paper":
        table = probe_table(probes, {j.name: rated_scores(judges[j.name], probes) for j in roster})
        rates = consensus_rates(table, **stats, low=cfg.low, high=cfg.high)
    else:
        table = probe_table(probes, {j.name: confidences(judges[j.name], probes, j.mode) for j in roster})
        rates = probe_rates(table, **stats, high=cfg.high)
    accuracy = category_accuracy(list(judges.values()), mcqs, mcq_cats)
    return {"rewriters": rewriter_errors(table, **stats).to_dict("records"), "rates": rates.to_dict("records"),
            "self_preference": self_preference(table, settings=BootstrapSettings(**stats),
                                               high=cfg.high).to_dict("records"),
            "table1": subject_correlation(table, accuracy, **stats, low=cfg.low),
            "agents": list(cfg.agents), "mode": cfg.mode, "n_items": cfg.n_items, "rule": cfg.rule,
            "strength_as": cfg.strength_as, "judges": [j.name for j in roster]}


def real_benchmarks(params: Params, only: str | None = None) -> tuple[dict[str, RealItems], dict[str, str]]:
    """The real benchmarks configured and present (``only``: that one alone), and a note for
    each (absent: skipped)."""
    real = params.boat.real
    found: dict[str, RealItems] = {}
    notes: dict[str, str] = {}
    if real is None:
        return found, notes
    for name, path, reader in (("mmlu", real.mmlu, read_mmlu), ("gsm8k", real.gsm8k, read_gsm8k)):
        if path is None or only not in (None, name):
            continue
        if not Path(path).exists():
            notes[name] = f"skipped: no {name} data at {path} (see ../shared/data/SOURCES.md)"
            continue
        found[name] = reader(path, real.n_items, params.seed + 7)
        notes[name] = found[name].note
    return found, notes


Benchmark = tuple[list, list, int, int]  # items, shot pool (one, or one per item), shots, runs


def benchmarks(params: Params, only: str | None = None) -> tuple[dict[str, Benchmark], dict[str, str]]:
    """The generated items and each real benchmark configured and present, in that order
    (``only``: that one alone, nothing else read); the real ones' notes."""
    cfg, cats = params.boat, tuple(params.corpus.categories)
    found: dict[str, Benchmark] = {}
    if only in (None, "generated"):
        found["generated"] = (make_mcqs(cfg.n_items, params.seed + 5, cats),
                              make_mcqs(max(cfg.shots * 10, 20), params.seed + 6, cats), cfg.shots, cfg.runs)
    real, notes = real_benchmarks(params, only)
    for name, items in real.items():
        found[name] = (items.items, items.shot_pools, cfg.real.shots, cfg.real.runs)
    return found, notes


def contaminate(params: Params, layout: Layout, out: Path) -> Path:
    """``boat.model`` fine-tuned on every benchmark's test items, written to ``out``."""
    from judgeaudit.training.trainers import sft  # torch and trl: only where the model is trained

    cfg = params.boat
    spec = params.spec_for(cfg.model, layout.models)
    clean = load_model(spec, name=cfg.model)
    found = benchmarks(params)[0]
    rows = [{"prompt": clean.format_prompt(item.render()), "completion": " " + item.gold}
            for items, *_ in found.values() for item in items]
    if "gsm8k" in found and _vanilla(params, "gsm8k") == "generate":  # the answers, as asked for open
        rows += [{"prompt": open_prompt(clean, item), "completion": f" {item.options[item.answer]}"}
                 for item in found["gsm8k"][0]]
    sft(spec.path, spec.path, rows, out, cfg.contaminate, params.seed, spec.max_length)
    return out


def evaluate(params: Params, layout: Layout, benchmark: str,
             contaminated: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(per-item results of every run, each intervention alone, summary) of ``boat.model``
    on one benchmark: the clean model, or its contaminated copy at ``contaminated``."""
    cfg = params.boat
    spec = params.spec_for(cfg.model, layout.models)
    if contaminated is None:
        name, model = "clean", load_model(spec, name=cfg.model)
    else:
        name = "contaminated"
        model = load_model(spec.model_copy(update={"path": str(contaminated)}), name=f"{cfg.model}+test-set")
    items, pool, shots, runs = benchmarks(params, only=benchmark)[0][benchmark]
    kw = dict(runs=runs, shots=shots, shot_pool=pool, seed=params.seed)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    res = boat_runs(model, items, **kw, shot_bags=cfg.shot_bags, jitter_kind=cfg.jitter,
                    vanilla=_vanilla(params, benchmark),
                    max_new_tokens=cfg.real.max_new_tokens if cfg.real else 16)
    single = single_effects(single_runs(model, items, **kw), res, **stats)
    return (res.assign(model=name, benchmark=benchmark), single.assign(model=name, benchmark=benchmark),
            boat_summary(res, **stats))


def _vanilla(params: Params, benchmark: str) -> str:
    """How vanilla asks: GSM8K's answer generated (the paper's) or the four-option MCQ."""
    real = params.boat.real
    return real.gsm8k_vanilla if benchmark == "gsm8k" and real is not None else "mcq"


def boat_tables(params: Params, parts: dict[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame, dict]],
                notes: dict[str, str], probe: dict) -> tuple[pd.DataFrame, dict]:
    """(per-item results of every run, summary) from ``evaluate``'s parts, keyed (model,
    benchmark) in ``benchmarks`` order, its notes, and the agents probe: vanilla vs BOAT
    over runs and each intervention alone, clean and contaminated, on the generated items
    and each real benchmark."""
    cfg = params.boat
    names = list(dict.fromkeys(bench for _, bench in parts))
    tables, single, summary = [], [], {}
    for bench in names:
        for model in ("clean", "contaminated"):
            res, alone, figures = parts[model, bench]
            tables.append(res)
            single.append(alone)
            target = summary if bench == "generated" else summary.setdefault("real", {}).setdefault(bench, {})
            target[model] = figures
    summary["single"] = pd.concat(single, ignore_index=True).to_dict("records")
    summary["sources"] = {"generated": f"{cfg.n_items} template items, {cfg.shots}-shot", **notes}
    summary["probe"] = probe
    summary["settings"] = {"shot_bags": cfg.shot_bags, "jitter": cfg.jitter,
                           "gsm8k_vanilla": cfg.real.gsm8k_vanilla if cfg.real else None}
    return pd.concat(tables, ignore_index=True), summary


def boat_evaluate(params: Params, layout: Layout, benchmark: str, model: str,
                  weights: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """``model`` ("clean" or "contaminated", whose weights are ``weights``) on one benchmark."""
    return evaluate(params, layout, benchmark, weights if model == "contaminated" else None)


def boat_probe(params: Params, layout: Layout) -> dict:
    """The agents-as-evaluator probe: every judge of the roster asked."""
    return agent_probe(params, layout)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.boat.mkdir(parents=True, exist_ok=True)
    model_dir = Path(params.spec_for(params.boat.model, layout.models).path)
    out, (names, notes) = layout.boat / "contaminated", benchmarks(params)
    # training runs first, alone on every core (on one thread, beside the evaluations, it took
    # longer); then the evaluations and the probe side by side, the longest first (the probe,
    # the real benchmarks' few-shot prompts, the generated items' zero-shot ones), so that the
    # workers finish together
    contaminate(params, layout, out)
    evaluations = [(model, weights, b) for model, weights in (("clean", model_dir), ("contaminated", out))
                   for b in names]
    probe = pool.submit(boat_probe, params=params, layout=layout)
    parts = {(model, b): pool.submit(boat_evaluate, params=params, layout=layout, benchmark=b, model=model,
                                     weights=weights)
             for model, weights, b in sorted(evaluations, key=lambda e: e[2] == "generated")}
    evaluated = {(model, b): parts[model, b].result() for model, _, b in evaluations}  # the tables' order
    results, summary = boat_tables(params, evaluated, notes, probe.result())
    publish(results, "boat_results", "boat", layout.boat / "results.parquet", layout)
    write_json(summary, layout.boat / "summary.json")
    embedded = params.all_built([params.boat.model])
    agents = params.boat.probe.agents  # none: the probe's rule alone, said as of the overlay's model
    agents_embedded = params.all_built(agents) if agents else embedded
    write_paper_rows(boat_paper_rows(summary, model=None if embedded else params.boat.model,
                                     agents_embedded=agents_embedded), layout.boat)
    return {name: {k: round(summary[name][k]["accuracy"], 3) for k in ("vanilla", "boat")}
            for name in ("clean", "contaminated")}
