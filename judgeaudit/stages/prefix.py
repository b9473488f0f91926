"""Stage ``prefix``: reward-model prefix bias per preference source and base: zero-shot,
baseline, and per-group augmentation audited on its group (aug) and the others (aug-gen).
Each (source, base) is one unit over the stage's worker processes, the longest first; the
tables keep the params' order.

prefix bias of reward models trained in the pipeline (baseline; per
group, augmented with that group's prefixes and audited on it, "aug", and on the other
groups, "aug-gen"), beside each base LM judging zero-shot, for several bases and on
synthetic and real (hh-rlhf) preferences."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.attacks.transforms import add_prefix
from judgeaudit.audits.prefix_bias import (auto_influence, bar_cis, cross_influence, fingerprint_agreement,
                                           mean_abs_offdiagonal)
from judgeaudit.audits.stats import mean_ci
from judgeaudit.config import Params
from judgeaudit.config.audits import ScratchBase
from judgeaudit.generation.corpus import degrade, make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.layout import Layout
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.report.prefix_report import prefix_paper_rows
from judgeaudit.sources.hh_rlhf import hh_rlhf_items
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="prefix",
    params=(*MODELS, "audit", "prefix"),
    deps=("models",),
    outs=("prefix",),
    section="prefix",
    pool=True,
)


OVERLAY = ("params-gpu.yaml `prefix`: Qwen2.5-0.5B as the main base beside Llama-3.2-1B (two architectures), "
           "reward heads trained on CUDA with transformers")


def preference_items(params: Params) -> tuple[list[dict], list[dict]]:
    """(train, test) items {q, chosen, rejected}: the correct vs a degraded answer, one style."""
    cfg = params.prefix
    rng = random.Random(params.seed + 11)
    items = []
    for it in make_items(cfg.n_items, params.seed + 11, "h", tuple(params.corpus.categories)):
        style = rng.choice(STYLES)
        items.append({"q": it.prompt, "chosen": render(it, style, rng),
                      "rejected": render(it, style, rng, fact=degrade(it, rng))})
    cut = int(round(len(items) * (1 - cfg.test_share)))
    train = items[:cut]
    if cfg.planted_prefix:  # a spurious cue the audit should find: the prefix marks "chosen"
        for it in rng.sample(train, int(round(cfg.planted_share * len(train)))):
            it["chosen"] = add_prefix(it["chosen"], cfg.planted_prefix)
    return train, items[cut:]


def augment(items: list[dict], prefixes: list[str], pairs: int, seed: int) -> list[dict]:
    """Each item, plus ``pairs`` copies with random prefixes on chosen and rejected."""
    rng = random.Random(seed)
    out = list(items)
    for it in items:
        for _ in range(pairs):
            p1, p2 = rng.choice(prefixes), rng.choice(prefixes)
            out.append({**it, "chosen": add_prefix(it["chosen"], p1), "rejected": add_prefix(it["rejected"], p2)})
    return out


def preference_sources(params: Params) -> list[str]:
    """The preference sources the stage audits: the synthetic pairs, and hh-rlhf where
    configured and present."""
    hh = params.prefix.hh_rlhf
    return ["synthetic"] + (["hh-rlhf"] if hh is not None and Path(hh.path).exists() else [])


def preference_sets(params: Params, sources: list[str] | None = None
                    ) -> tuple[dict[str, tuple[list[dict], list[dict]]], dict[str, str]]:
    """{source: (train, test)} of ``sources`` (default: every configured one): the
    synthetic pairs (with the planted cue), and hh-rlhf's human preferences (split by
    ``test_share``); a note each, and one for hh-rlhf configured but absent."""
    cfg, hh = params.prefix, params.prefix.hh_rlhf
    wanted = preference_sources(params) if sources is None else sources
    sets, notes = {}, {}
    if "synthetic" in wanted:
        sets["synthetic"] = preference_items(params)
        notes["synthetic"] = (f"{cfg.n_items} template items, correct vs degraded answer"
                              + (f", {cfg.planted_prefix.strip()!r} planted on {cfg.planted_share:.0%} of chosen"
                                 if cfg.planted_prefix else ""))
    if "hh-rlhf" in wanted:
        items, notes["hh-rlhf"] = hh_rlhf_items(hh.path, hh.n_items, params.seed + 12, hh.question_chars,
                                                hh.answer_chars)
        cut = int(round(len(items) * (1 - cfg.test_share)))
        sets["hh-rlhf"] = (items[:cut], items[cut:])
    elif sources is None and hh is not None:
        notes["hh-rlhf"] = f"skipped: no hh-rlhf data at {hh.path} (see ../shared/data/SOURCES.md)"
    return sets, notes


def _audit(scorer, test: list[dict], prefixes: list[str], stats: dict) -> tuple[list[pd.DataFrame], dict]:
    q = [r["q"] for r in test]
    chosen, rejected = [r["chosen"] for r in test], [r["rejected"] for r in test]
    omega = auto_influence(scorer, q + q, chosen + rejected, prefixes, **stats)  # every unique (q, a)
    alpha, _ = cross_influence(scorer, q, chosen, rejected, prefixes, **stats)
    bars = {"omega_bar": mean_abs_offdiagonal(omega), "alpha_bar": mean_abs_offdiagonal(alpha)}
    for name, m in (("omega", omega), ("alpha", alpha)):  # cells whose CI excludes 0: a bias found
        off = m[m.p1 != m.p2]
        bars[f"{name}_cells"], bars[f"{name}_cells_clear"] = len(off), int(((off.ci_low > 0) | (off.ci_high < 0)).sum())
    return [omega, alpha], {**bars, **bar_cis(scorer, q, chosen, rejected, prefixes, **stats)}


def _accuracy(scorer, test: list[dict], stats: dict) -> dict:
    wins = scorer([r["q"] for r in test], [r["chosen"] for r in test], [r["rejected"] for r in test])
    est = mean_ci(np.where(wins > 0, 1.0, np.where(wins < 0, 0.0, 0.5)), **stats)
    return {"accuracy": est.estimate, "accuracy_ci_low": est.ci_low, "accuracy_ci_high": est.ci_high,
            "n_test": est.n}


def scratch_bases(params: Params) -> tuple[dict[str, ScratchBase], dict[str, str]]:
    """({name: base} of the other architecture's bases the stage can build: those ``like``
    an embedded model built from scratch, a note for each other one (skipped)."""
    found, notes = {}, {}
    for sb in params.prefix.scratch_bases:
        like = params.models.get(sb.like)
        if like is None or like.build is None or like.build.size is None:
            notes[sb.name] = f"skipped: {sb.like!r} is no embedded model built from scratch (models.{sb.like}.build.size)"
        else:
            found[sb.name] = sb
    return found, notes


def build_scratch_base(params: Params, name: str, tokenizer: Path, out: Path) -> dict:
    """Pre-train scratch base ``name`` as its ``like`` model is pre-trained: the same
    tokenizer, size, corpus style and epochs, its own seed and architecture."""
    from transformers import AutoTokenizer

    from judgeaudit.models.scratch_gpt2 import build_gpt2  # torch: only where a base is built
    from judgeaudit.training.trainers import sft

    sb = scratch_bases(params)[0][name]
    build = params.models[sb.like].build
    size, seed = params.embedded.sizes[build.size], params.seed + sb.seed
    model = build_gpt2(AutoTokenizer.from_pretrained(str(tokenizer)), layers=size.layers, hidden=size.hidden,
                       heads=size.heads, intermediate=size.intermediate,
                       max_positions=params.embedded.max_positions, seed=seed)
    pre = params.embedded.pretrain
    args = pre if build.epochs is None else pre.model_copy(update={"epochs": build.epochs})
    rng = random.Random(seed)
    rows = [{"prompt": params.embedded.template.format(prompt=it.prompt),
             "completion": " " + render(it, rng.choice(STYLES) if build.corpus_style == "mixed" else build.corpus_style,
                                        rng)}
            for it in make_items(params.corpus.n_pretrain, seed, "c", tuple(params.corpus.categories))]
    summary = sft(model, tokenizer, rows, out / name, args, seed)
    return {"base": name, "arch": sb.arch, "like": sb.like, "seed": seed, **summary}


def base_spec(params: Params, base: str, models_dir: Path, bases_dir: Path) -> ModelSpec:
    """The spec a base loads with: a model of ``models``, or a scratch base under ``bases_dir``."""
    if base in scratch_bases(params)[0]:
        return ModelSpec(path=str(bases_dir / base), **{"chat_template": params.embedded.template,
                                                        **params.model_defaults})
    return params.spec_for(base, models_dir)


def every_base(params: Params) -> list[str]:
    """The bases of ``models`` (the main first), then the scratch bases that can be built."""
    return [*params.prefix.all_bases, *scratch_bases(params)[0]]


def prefix_units(params: Params) -> list[tuple[str, str]]:
    """The (source, base) pairs the stage audits: every base on the synthetic pairs (the
    cross-model table), hh-rlhf's on the main base unless ``every_base``."""
    cfg = params.prefix
    return [(source, base) for source in preference_sources(params)
            for base in (every_base(params) if source == "synthetic" or cfg.hh_rlhf.every_base else [cfg.base])]


def unit_cost(params: Params, source: str, base: str, models_dir: Path) -> float:
    """A unit's relative cost, to start the longest first: its items times its base's
    weight bytes (1 for a base with no local weights; a scratch base: its ``like``'s)."""
    cfg = params.prefix
    n = cfg.hh_rlhf.n_items if source == "hh-rlhf" else cfg.n_items
    sb = scratch_bases(params)[0].get(base)
    return n * max(params.spec_for(sb.like if sb else base, models_dir).weight_bytes, 1)


def prefix_unit(params: Params, source: str, base: str, models_dir: Path, out: Path
                ) -> tuple[pd.DataFrame, list[dict]]:
    """(omega and alpha matrices, summary rows) of one (source, base): the base judging
    zero-shot (its fingerprint), the baseline RM, and per group an RM augmented with that
    group's prefixes, audited on its own group ("aug") and on every other ("aug-gen"):
    aug-gen in every direction. ``models_dir``: the embedded models; the reward models
    are written under ``out``."""
    from judgeaudit.judging.reward import RewardScorer, ZeroShotScorer, comparison_pair  # torch: only here
    from judgeaudit.training.trainers import reward_model

    cfg = params.prefix
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    train, test = preference_sets(params, [source])[0][source]
    spec = base_spec(params, base, models_dir, out.parent / "bases")
    plans = {("baseline", "-"): train}
    plans |= {("group-aug", g): augment(train, cfg.groups[g], cfg.aug_pairs, params.seed) for g in cfg.groups}
    scorers = {("zero-shot", "-"): ZeroShotScorer(load_model(spec, name=base))}
    for (kind, group), data in plans.items():
        rm = out / (kind if group == "-" else "aug-" + group)
        reward_model(spec.path, [comparison_pair(r["q"], r["chosen"], r["rejected"]) for r in data], rm,
                     cfg.train, params.seed, spec.max_length)
        scorers[kind, group] = RewardScorer(str(rm), device=spec.device)
    frames, rows = [], []
    zero_shot = scorers["zero-shot", "-"]
    questions = [r["q"] for r in test] * 2
    answers = [r["chosen"] for r in test] + [r["rejected"] for r in test]
    for (kind, trained), scorer in scorers.items():
        acc = _accuracy(scorer, test, stats)
        for group, prefixes in cfg.groups.items():
            variant = kind if kind != "group-aug" else ("aug" if group == trained else "aug-gen")
            key = dict(source=source, base=base, variant=variant, trained_group=trained, group=group)
            mats, bars = _audit(scorer, test, prefixes, stats)
            frames += [m.assign(**key) for m in mats]
            fingerprint = {} if scorer is zero_shot else fingerprint_agreement(
                zero_shot, scorer, questions, answers, prefixes, **stats)  # scores already memoised
            rows.append({**key, **bars, **acc, **fingerprint})
    return pd.concat(frames, ignore_index=True), rows


def prefix_summary(params: Params, units: list[tuple[pd.DataFrame, list[dict]]]) -> tuple[pd.DataFrame, dict]:
    """(every unit's matrices, the stage summary: rows with accuracy relative to the
    baseline RM of the same source and base, the sources' notes, bases, groups)."""
    cfg = params.prefix
    notes = preference_sets(params)[1]
    if "hh-rlhf" in notes and not notes["hh-rlhf"].startswith("skipped") and not cfg.hh_rlhf.every_base \
            and len(cfg.all_bases) > 1:
        notes["hh-rlhf"] += f"; on the main base {cfg.base} only (prefix.hh_rlhf.every_base: true for every base)"
    summary_rows = pd.DataFrame([row for _, rows in units for row in rows])
    baseline = summary_rows[summary_rows.variant == "baseline"].groupby(["source", "base"])["accuracy"].first()
    summary_rows["accuracy_ratio"] = summary_rows.accuracy / baseline.reindex(
        pd.MultiIndex.from_frame(summary_rows[["source", "base"]])).to_numpy()
    # no NaN in the JSON: a zero-shot row has no fingerprint
    records = [{k: v for k, v in r.items() if v == v} for r in summary_rows.to_dict("records")]
    summary = {"rows": records, "sources": notes, "bases": every_base(params),
               "main_base": cfg.base, "groups": {g: list(v) for g, v in cfg.groups.items()},
               "aug_pairs": cfg.aug_pairs, "scratch_bases": scratch_bases(params)[1]}
    return pd.concat([frame for frame, _ in units], ignore_index=True), summary


def architecture(spec: ModelSpec) -> str:
    """A base's architecture: its checkpoint's ``model_type`` (else its path)."""
    import json

    config = Path(spec.path) / "config.json"
    return json.loads(config.read_text()).get("model_type", spec.path) if config.exists() else spec.path


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.prefix.mkdir(parents=True, exist_ok=True)
    units = prefix_units(params)
    bases_dir = layout.prefix / "bases"  # the other architecture's bases, pre-trained here first
    built = [pool.submit(build_scratch_base, params=params, name=name, tokenizer=layout.tokenizer, out=bases_dir)
             for name in scratch_bases(params)[0]]
    built = [f.result() for f in built]
    # the longest first: the two workers then finish together (the tables keep params order)
    longest = sorted(units, key=lambda u: -unit_cost(params, *u, layout.models))
    futures = {(source, base): pool.submit(prefix_unit, params=params, source=source, base=base,
                                           models_dir=layout.models,
                                           out=layout.prefix / f"rm-{source}-{base}")
               for source, base in longest}
    matrices, summary = prefix_summary(params, [futures[u].result() for u in units])
    keep = {f"rm-{source}-{base}" for source, base in units}
    for stale in layout.prefix.glob("rm-*"):  # reward models of an earlier config or layout
        if stale.is_dir() and stale.name not in keep:
            shutil.rmtree(stale)
    publish(matrices, "prefix_matrices", "prefix", layout.prefix / "matrices.parquet", layout)
    summary["architectures"] = {b: architecture(base_spec(params, b, layout.models, bases_dir))
                                for b in every_base(params)}
    summary["built"] = built
    write_json(summary, layout.prefix / "summary.json")
    embedded = params.all_built(b for b in every_base(params) if b not in scratch_bases(params)[0])
    write_paper_rows(prefix_paper_rows(summary, embedded=embedded, overlay=OVERLAY), layout.prefix)
    return {f"{r['source']}/{r['base']}/{r['variant']}/{r['trained_group']}/{r['group']}":
            round(r["alpha_bar"], 3) for r in summary["rows"]}
