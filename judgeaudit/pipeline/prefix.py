"""Stage ``prefix``: prefix bias of reward models trained in the pipeline (baseline, with
prefix augmentation, and "aug-gen": augmented with one group's prefixes, audited on the
others), beside a base LM judging zero-shot."""

from __future__ import annotations

import random

import pandas as pd

from judgeaudit.attacks.transforms import add_prefix
from judgeaudit.audits.prefix_bias import auto_influence, cross_influence, mean_abs_offdiagonal
from judgeaudit.config import Params
from judgeaudit.generation.corpus import degrade, make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.judging.reward import RewardScorer, ZeroShotScorer, comparison_pair
from judgeaudit.models import load_model
from judgeaudit.pipeline.layout import Layout
from judgeaudit.training.trainers import reward_model


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


def prefix_stage(params: Params, layout: Layout) -> tuple[pd.DataFrame, dict]:
    """(omega and alpha matrices of every variant and group, summary)."""
    cfg = params.prefix
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    spec = params.spec_for(cfg.base, layout.models)
    train, test = preference_items(params)
    all_prefixes = sorted({p for group in cfg.groups.values() for p in group})
    held_out = [g for g in cfg.groups if g != cfg.aug_gen_train_group]
    plans = {"baseline": (train, list(cfg.groups)),
             "aug": (augment(train, all_prefixes, cfg.aug_pairs, params.seed), list(cfg.groups)),
             "aug-gen": (augment(train, cfg.groups[cfg.aug_gen_train_group], cfg.aug_pairs, params.seed),
                         held_out)}
    scorers = {"zero-shot": (ZeroShotScorer(load_model(spec, name=cfg.base)), list(cfg.groups))}
    for variant, (rows, groups) in plans.items():
        out = layout.prefix / f"rm-{variant}"
        reward_model(spec.path, [comparison_pair(r["q"], r["chosen"], r["rejected"]) for r in rows], out,
                     cfg.train, params.seed, spec.max_length)
        scorers[variant] = (RewardScorer(str(out), device=spec.device), groups)
    q = [r["q"] for r in test]
    answers_q = q + q  # unique (q, a): every chosen and rejected answer
    answers = [r["chosen"] for r in test] + [r["rejected"] for r in test]
    frames, summary = [], {}
    for variant, (scorer, groups) in scorers.items():
        entry = {}
        for group in groups:
            omega = auto_influence(scorer, answers_q, answers, cfg.groups[group], **stats)
            alpha, accuracy = cross_influence(scorer, q, [r["chosen"] for r in test],
                                              [r["rejected"] for r in test], cfg.groups[group], **stats)
            frames += [m.assign(variant=variant, group=group) for m in (omega, alpha)]
            entry[group] = {"omega_bar": mean_abs_offdiagonal(omega), "alpha_bar": mean_abs_offdiagonal(alpha)}
        entry["accuracy"] = accuracy
        entry["n_test"] = len(test)
        summary[variant] = entry
    for entry in summary.values():
        entry["accuracy_ratio"] = entry["accuracy"] / summary["baseline"]["accuracy"] \
            if summary["baseline"]["accuracy"] else float("nan")
    return pd.concat(frames, ignore_index=True), summary
