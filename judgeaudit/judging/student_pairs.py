"""Judging the students' head-to-heads: the pairs (generator i against generator j within
a student base and method, per prompt), one judge's verdicts on them in both orders,
one binary verdict per pair, and the pairs with the losing response attacked. Shared by
the judge, robustness, pu and leakage_studies stages."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.attacks.rewriter import attack_texts
from judgeaudit.config import Params
from judgeaudit.judging.both_orders import verdicts_both_orders
from judgeaudit.judging.pairwise import binary_verdict
from judgeaudit.models import load_model
from judgeaudit.models.base import LanguageModel


def unique_roster(params: Params) -> list[dict]:
    """The judge roster, each judge model once (its first role in params order)."""
    seen, roster = set(), []
    for entry in params.judge_roster():
        if entry["judge"] not in seen:
            seen.add(entry["judge"])
            roster.append(entry)
    return roster



def comparisons(responses: pd.DataFrame, generators: list[str]) -> pd.DataFrame:
    """The head-to-heads: generator pairs (i < j in params order) within each
    (method, student base), on each eval prompt; canonical first = generator i."""
    rank = {g: k for k, g in enumerate(generators)}
    wide = responses.pivot_table(index=["method", "student_base", "prompt_id"], columns="generator",
                                 values="response", aggfunc="first")
    prompts = responses.drop_duplicates("prompt_id").set_index("prompt_id")["prompt"]
    ids = responses.drop_duplicates(["method", "student_base", "generator"]).set_index(
        ["method", "student_base", "generator"])["student_id"]
    rows = []
    for (method, base, pid), answers in wide.iterrows():
        for gi, gj in itertools.combinations(sorted(answers.dropna().index, key=rank.get), 2):
            rows.append(dict(method=method, student_base=base, prompt_id=pid, prompt=prompts[pid],
                             generator_a=gi, generator_b=gj, student_a=ids[(method, base, gi)],
                             student_b=ids[(method, base, gj)], response_a=answers[gi],
                             response_b=answers[gj]))
    return pd.DataFrame(rows)


def load_judge(params: Params, judge: dict, models_dir: Path, progress: bool = False) -> LanguageModel:
    """The model of roster entry ``judge``: load it once to judge several sets of pairs with
    it (``judge_pairs(..., model=)``), so that what it scored for one set it does not score
    again for the next."""
    return load_model(params.spec_for(judge["judge"], models_dir), name=judge["judge"], progress=progress)


def judge_pairs(params: Params, judge: dict, pairs: pd.DataFrame, models_dir: Path,
                progress: bool = True, verdicts: Callable[..., dict] = verdicts_both_orders,
                model: LanguageModel | None = None) -> pd.DataFrame:
    """One judge's verdicts on ``pairs``, two rows per pair (orders AB and BA);
    ``models_dir``: where the embedded models are; ``verdicts``: how the judge reaches
    them (``verdicts_both_orders``' signature); ``model``: the judge already loaded
    (``load_judge``), else it is loaded here."""
    name = judge["judge"]
    mode = params.judge.modes.get(name, params.judge.mode)
    model = model or load_judge(params, judge, models_dir, progress)
    orders = verdicts(model, mode, params.judge, pairs["prompt"], pairs["response_a"], pairs["response_b"],
                      seed=params.seed)
    keep = ["method", "student_base", "prompt_id", "student_a", "student_b", "generator_a", "generator_b"]
    return pd.concat([pairs[keep].assign(judge=name, tier=judge["tier"],
                                         related_generator=judge["related_generator"] or "", mode=mode,
                                         order=order, **columns)
                      for order, columns in orders.items()], ignore_index=True)


def binary_verdicts(judgments: pd.DataFrame, key: list[str]) -> pd.Series:
    """One "A"/"B" verdict per comparison (indexed by ``key``) from its two orders."""
    wide = judgments.pivot_table(index=key, columns="order", values="verdict", aggfunc="first")
    return pd.Series([binary_verdict(a, b) for a, b in zip(wide["AB"], wide["BA"])], index=wide.index)


def attack_losers(pairs: pd.DataFrame, lose_a: np.ndarray, attack: str, rewriter=None) -> pd.DataFrame:
    """``pairs`` with attack ``attack`` applied to the response the judge made lose."""
    return pairs.assign(
        response_a=np.where(lose_a, attack_texts(attack, pairs.response_a.tolist(), rewriter), pairs.response_a),
        response_b=np.where(~lose_a, attack_texts(attack, pairs.response_b.tolist(), rewriter), pairs.response_b))
