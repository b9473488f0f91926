"""Vanilla vs BOAT accuracy of a model on multiple-choice items.

A model answers by the log-probabilities of the option labels (or " Yes"/" No" after
binary transformation) right after the prompt: one forward pass, no sampling. Few-shot
examples receive interventions too (answer removal at half the rate), so the format
of the shots never gives the intervened item away.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.audits.boat import MCQ, apply_bag, sample_bag
from judgeaudit.audits.stats import mean_ci
from judgeaudit.models.base import LanguageModel


def mcq_prompt(model: LanguageModel, item: MCQ, shots: Sequence[MCQ] = ()) -> str:
    context = "".join(f"{model.format_prompt(s.render())} {s.gold}\n\n" for s in shots)
    return context + model.format_prompt(item.render())


def predict(model: LanguageModel, items: Sequence[MCQ], shots: Sequence[Sequence[MCQ]]) -> list[str]:
    """The label each item gets; items are batched by their candidate set."""
    answers = [""] * len(items)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(("Yes", "No") if item.binary is not None else item.labels, []).append(i)
    for labels, idx in groups.items():
        logp = model.next_token_logprobs([mcq_prompt(model, items[i], shots[i]) for i in idx],
                                         [" " + lab for lab in labels])
        for i, row in zip(idx, logp):
            answers[i] = labels[int(np.argmax(row))]
    return answers


def _shots(pool: Sequence[MCQ], k: int, rng: random.Random, intervene: bool) -> list[MCQ]:
    picked = rng.sample(list(pool), k) if k else []
    if not intervene:
        return picked
    return [apply_bag(s, sample_bag(rng, answer_removal_scale=0.5), rng) for s in picked]


def boat_runs(model: LanguageModel, items: Sequence[MCQ], *, runs: int = 5, shots: int = 0,
              shot_pool: Sequence[MCQ] = (), seed: int = 0) -> pd.DataFrame:
    """One row per (run, item): vanilla and BOAT correctness and the bag applied."""
    rows = []
    for run in range(runs):
        rng = random.Random(seed * 1000 + run)
        vanilla_shots = [_shots(shot_pool, shots, rng, False) for _ in items]
        bags = [sample_bag(rng) for _ in items]
        boat_items = [apply_bag(item, bag, rng) for item, bag in zip(items, bags)]
        boat_shots = [_shots(shot_pool, shots, rng, True) for _ in items]
        vanilla = predict(model, items, vanilla_shots)
        boat = predict(model, boat_items, boat_shots)
        for k, (item, bi, bag, v, b) in enumerate(zip(items, boat_items, bags, vanilla, boat)):
            rows.append({"run": run, "item": k, "bag": "+".join(bag) or "none",
                         "vanilla_correct": v == item.gold, "boat_correct": b == bi.gold})
    return pd.DataFrame(rows)


def boat_summary(results: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> dict:
    """Vanilla and BOAT accuracy (mean and std over runs, CI over items), accuracy per
    intervention, and the 2x2 confusion (vanilla right/wrong x BOAT right/wrong)."""
    per_run = results.groupby("run")[["vanilla_correct", "boat_correct"]].mean()
    per_item = results.groupby("item")[["vanilla_correct", "boat_correct"]].mean()
    out = {"n_items": int(results["item"].nunique()), "runs": int(results["run"].nunique())}
    for col, name in (("vanilla_correct", "vanilla"), ("boat_correct", "boat")):
        ci = mean_ci(per_item[col].to_numpy(), n_boot=n_boot, confidence=confidence, seed=seed)
        out[name] = {"accuracy": float(per_run[col].mean()), "std": float(per_run[col].std(ddof=0)),
                     "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n": ci.n}
    exploded = results.assign(intervention=results["bag"].str.split("+")).explode("intervention")
    out["per_intervention"] = {
        name: {"accuracy": float(g["boat_correct"].mean()), "n": int(len(g))}
        for name, g in exploded.groupby("intervention")}
    confusion = pd.crosstab(results["vanilla_correct"], results["boat_correct"]).reindex(
        index=[True, False], columns=[True, False], fill_value=0)
    out["confusion"] = {f"vanilla_{'right' if v else 'wrong'}/boat_{'right' if b else 'wrong'}":
                        int(confusion.loc[v, b]) for v in (True, False) for b in (True, False)}
    return out
