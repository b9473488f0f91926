"""Vanilla vs BOAT accuracy of a model on multiple-choice items.

A model answers an MCQ by the log-probabilities of the candidate replies (the option
labels, N where the hint allows it, True/False per option after binary transformation)
right after the prompt: one forward pass per question, no sampling. Few-shot examples
carry the same bag of interventions as the test item, as in the paper (``shot_bags=
"independent"``: ours, each shot its own bag with answer removal at half the rate).
Interventions draw their distractor question from the other items of the same dataset.

Vanilla is the plain MCQ (``vanilla="mcq"``), or, for word problems (GSM8K), as in the
paper, the answer the model generates for the question alone, greedily, exact match on
its first number (``vanilla="generate"``; ours: ``"mcq"``, the four-option item). Each
intervention alone is measured against the un-intervened item scored as it is (the plain
MCQ, ``vanilla_mcq_correct``), so that a generated vanilla's change of format is not read
as the intervention's effect.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.audits.boat import JITTERS, SINGLE, apply_bag, sample_bag
from judgeaudit.audits.stats import clustered_share, mean_ci
from judgeaudit.generation.mcq import MCQ
from judgeaudit.models.base import LanguageModel

_NUMBER = re.compile(r"-?\d[\d,]*")


def shot_text(model: LanguageModel, shot: MCQ) -> str:
    return "".join(f"{model.format_prompt(prompt)} {gold}\n\n" for prompt, _, gold in shot.queries())


def predict(model: LanguageModel, items: Sequence[MCQ], shots: Sequence[Sequence[MCQ]]) -> list[bool]:
    """Whether each item is answered right (every one of its questions); questions are
    batched by their candidate set."""
    right = [True] * len(items)
    groups: dict[tuple[str, ...], list[tuple[int, str, str]]] = {}
    for i, item in enumerate(items):
        context = "".join(shot_text(model, s) for s in shots[i])
        for prompt, candidates, gold in item.queries():
            groups.setdefault(candidates, []).append((i, context + model.format_prompt(prompt), gold))
    for candidates, asked in groups.items():
        logp = model.next_token_logprobs([q for _, q, _ in asked], [" " + c for c in candidates])
        for (i, _, gold), row in zip(asked, logp):
            right[i] &= candidates[int(np.argmax(row))] == gold
    return right


def first_number(reply: str) -> int | None:
    """The first integer in a generated reply (thousands commas dropped), None if none."""
    found = _NUMBER.search(reply)
    return None if found is None else int(found.group().replace(",", "") or 0)


def open_prompt(model: LanguageModel, item: MCQ) -> str:
    return model.format_prompt(f"Question: {item.question}\nAnswer with the number only.")


def generate_correct(model: LanguageModel, items: Sequence[MCQ], shots: Sequence[Sequence[MCQ]],
                     max_new_tokens: int = 16) -> list[bool]:
    """Whether each item's generated answer (greedy, the question alone after the shots'
    question-answer pairs) matches its answer exactly, on the first number of the reply."""
    prompts = ["".join(f"{open_prompt(model, s)} {s.options[s.answer]}\n\n" for s in shots[i])
               + open_prompt(model, item) for i, item in enumerate(items)]
    replies = model.generate(prompts, max_new_tokens=max_new_tokens, temperature=0.0)
    return [first_number(r) == int(item.options[item.answer]) for r, item in zip(replies, items)]


def _shots(pool: Sequence[MCQ], k: int, rng: random.Random) -> list[MCQ]:
    return rng.sample(list(pool), min(k, len(pool))) if k else []


def _intervened_shots(picked: list[MCQ], bag: tuple[str, ...], rng: random.Random, dataset: Sequence[MCQ],
                      shot_bags: str, jitter_kind: str) -> list[MCQ]:
    """The shots under the test item's bag (the paper's), or each under its own (ours)."""
    if shot_bags == "same":
        return [apply_bag(s, bag, rng, dataset) for s in picked]
    if shot_bags != "independent":
        raise ValueError(f"unknown shot_bags {shot_bags!r}: same or independent")
    return [apply_bag(s, sample_bag(rng, answer_removal_scale=0.5, jitter=s.jitterable, jitter_kind=jitter_kind),
                      rng, dataset) for s in picked]


def _pools(items: Sequence[MCQ], shot_pool: Sequence[MCQ] | Sequence[Sequence[MCQ]]) -> list[Sequence[MCQ]]:
    """The few-shot pool of each item: one pool for all, or one per item."""
    if shot_pool and not isinstance(shot_pool[0], MCQ):
        if len(shot_pool) != len(items):
            raise ValueError(f"{len(shot_pool)} shot pools for {len(items)} items")
        return list(shot_pool)
    return [shot_pool] * len(items)


def _dataset(items: Sequence[MCQ], pools: Sequence[Sequence[MCQ]]) -> list[MCQ]:
    """The test items and every shot, once each: what the interventions draw other
    questions and options from (a subject's five dev items can share all their options)."""
    seen: dict[int, MCQ] = {}
    for item in [*items, *(s for pool in pools for s in pool)]:
        seen.setdefault(id(item), item)
    return list(seen.values())


def boat_runs(model: LanguageModel, items: Sequence[MCQ], *, runs: int = 5, shots: int = 0,
              shot_pool: Sequence[MCQ] | Sequence[Sequence[MCQ]] = (), seed: int = 0,
              shot_bags: str = "same", jitter_kind: str = "question_jitter", vanilla: str = "mcq",
              max_new_tokens: int = 16) -> pd.DataFrame:
    """One row per (run, item): vanilla and BOAT correctness, the plain MCQ's (the vanilla
    one unless ``vanilla="generate"``, then asked as well, with the same shots) and the bag
    applied. ``shot_pool``: one pool for every item, or one per item (e.g. MMLU's subject dev sets)."""
    if vanilla not in ("mcq", "generate"):
        raise ValueError(f"unknown vanilla {vanilla!r}: mcq or generate")
    pools = _pools(items, shot_pool)
    dataset = _dataset(items, pools)
    rows = []
    for run in range(runs):
        rng = random.Random(seed * 1000 + run)
        vanilla_shots = [_shots(pool, shots, rng) for pool in pools]
        bags = [sample_bag(rng, jitter=item.jitterable, jitter_kind=jitter_kind) for item in items]
        boat_items = [apply_bag(item, bag, rng, dataset) for item, bag in zip(items, bags)]
        boat_shots = [_intervened_shots(_shots(pool, shots, rng), bag, rng, dataset, shot_bags, jitter_kind)
                      for pool, bag in zip(pools, bags)]
        mcq = predict(model, items, vanilla_shots)
        plain = mcq if vanilla == "mcq" else generate_correct(model, items, vanilla_shots, max_new_tokens)
        boat = predict(model, boat_items, boat_shots)
        for k, (bag, v, m, b) in enumerate(zip(bags, plain, mcq, boat)):
            rows.append({"run": run, "item": k, "bag": "+".join(bag) or "none",
                         "vanilla_correct": v, "vanilla_mcq_correct": m, "boat_correct": b})
    return pd.DataFrame(rows)


def single_runs(model: LanguageModel, items: Sequence[MCQ], *, runs: int = 5, shots: int = 0,
                shot_pool: Sequence[MCQ] | Sequence[Sequence[MCQ]] = (), seed: int = 0) -> pd.DataFrame:
    """Each intervention alone on every item (answer removal with its hint), the shots
    given the same intervention: one row per (run, intervention, item)."""
    pools = _pools(items, shot_pool)
    dataset = _dataset(items, pools)
    rows = []
    for run in range(runs):
        rng = random.Random(seed * 1000 + 500 + run)
        for name, bag in SINGLE.items():
            # question jitter alone: on the items it can change (none: not measured)
            keep = [k for k, item in enumerate(items) if name not in JITTERS or item.jitterable]
            if not keep:
                continue
            picked = [_shots(pools[k], shots, rng) for k in keep]
            changed = [apply_bag(items[k], bag, rng, dataset) for k in keep]
            shown = [[apply_bag(s, bag, rng, dataset) for s in sh] for sh in picked]
            rows += [{"run": run, "intervention": name, "item": k, "correct": c}
                     for k, c in zip(keep, predict(model, changed, shown))]
    return pd.DataFrame(rows)


def single_effects(single: pd.DataFrame, vanilla: pd.DataFrame, *, n_boot: int, confidence: float,
                   seed: int) -> pd.DataFrame:
    """Per intervention alone: accuracy and its change from the plain MCQ, scored as the
    intervened items are (``vanilla_mcq_correct``; ``vanilla_correct`` where a frame lacks
    it), paired over items, each averaged over runs, with n and bootstrap CIs."""
    col = "vanilla_mcq_correct" if "vanilla_mcq_correct" in vanilla else "vanilla_correct"
    base = vanilla.groupby("item")[col].mean()
    rows = []
    for name, g in single.groupby("intervention", sort=False):
        acc = g.groupby("item")["correct"].mean()  # paired over the items it was applied to
        acc = acc.reindex([k for k in base.index if k in acc.index])
        est = mean_ci(acc.to_numpy(dtype=float), n_boot=n_boot, confidence=confidence, seed=seed)
        delta = mean_ci((acc - base.reindex(acc.index)).to_numpy(dtype=float), n_boot=n_boot,
                        confidence=confidence, seed=seed)
        rows.append({"intervention": name, "accuracy": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high,
                     "delta": delta.estimate, "delta_ci_low": delta.ci_low, "delta_ci_high": delta.ci_high,
                     "n": est.n})
    return pd.DataFrame(rows)


def boat_summary(results: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> dict:
    """Vanilla and BOAT accuracy (mean and std over runs, CI over items), the drop vanilla -
    BOAT (paired over items, each averaged over runs), BOAT accuracy on the
    rows whose bag holds each intervention (n rows; CI resampling items, n_items), and the
    2x2 confusion (vanilla right/wrong x BOAT right/wrong)."""
    per_run = results.groupby("run")[["vanilla_correct", "boat_correct"]].mean()
    per_item = results.groupby("item")[["vanilla_correct", "boat_correct"]].mean()
    out = {"n_items": int(results["item"].nunique()), "runs": int(results["run"].nunique())}
    for col, name in (("vanilla_correct", "vanilla"), ("boat_correct", "boat")):
        ci = mean_ci(per_item[col].to_numpy(), n_boot=n_boot, confidence=confidence, seed=seed)
        out[name] = {"accuracy": float(per_run[col].mean()), "std": float(per_run[col].std(ddof=0)),
                     "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n": ci.n}
    drop = mean_ci((per_item["vanilla_correct"] - per_item["boat_correct"]).to_numpy(dtype=float), n_boot=n_boot,
                   confidence=confidence, seed=seed)
    out["drop"] = {"accuracy": drop.estimate, "ci_low": drop.ci_low, "ci_high": drop.ci_high, "n": drop.n}
    exploded = results.assign(intervention=results["bag"].str.split("+")).explode("intervention")
    out["per_intervention"] = {}
    for name, g in exploded.groupby("intervention"):
        est = clustered_share(g["boat_correct"].to_numpy(), g["item"].to_numpy(), n_boot=n_boot,
                              confidence=confidence, seed=seed)
        out["per_intervention"][name] = {"accuracy": est.estimate, "ci_low": est.ci_low,
                                         "ci_high": est.ci_high, "n": int(len(g)), "n_items": est.n}
    confusion = pd.crosstab(results["vanilla_correct"], results["boat_correct"]).reindex(
        index=[True, False], columns=[True, False], fill_value=0)
    out["confusion"] = {f"vanilla_{'right' if v else 'wrong'}/boat_{'right' if b else 'wrong'}":
                        int(confusion.loc[v, b]) for v in (True, False) for b in (True, False)}
    return out
