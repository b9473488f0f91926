"""Judging the students' head-to-heads: the pairs (generator i against generator j within
a student base and method, per prompt), one judge's verdicts on them in both orders,
one binary verdict per pair, and the pairs with the losing response attacked. Shared by
the judge, robustness, pu and leakage_studies stages."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgeaudit.attacks.rewriter import attack_texts
from judgeaudit.config import Judge
from judgeaudit.judging.both_orders import verdicts_both_orders
from judgeaudit.judging.pairwise import binary_verdict
from judgeaudit.models import load_model
from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import ModelSpec


@dataclass(frozen=True)
class RosterJudge:
    """A judge of the roster as a stage resolves it at its door (``judgeaudit.resolve``):
    its name, its role (tier; the generator it is related to, None if unrelated), the spec
    it loads with and the mode it judges in."""
    name: str
    tier: str
    related_generator: str | None
    spec: ModelSpec
    mode: str  # a registered verdict mode (judging.modes)

    @property
    def role(self) -> dict:
        """Its roster entry as the audits read it (``Params.judge_roster``'s shape)."""
        return {"judge": self.name, "tier": self.tier, "related_generator": self.related_generator}


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


def load_judge(judge: RosterJudge, progress: bool = False) -> LanguageModel:
    """The judge's model: load it once to judge several sets of pairs with it
    (``judge_pairs(..., model=)``), so that what it scored for one set it does not score
    again for the next."""
    return load_model(judge.spec, name=judge.name, progress=progress)


def judge_pairs(judge: RosterJudge, pairs: pd.DataFrame, settings: Judge, seed: int, progress: bool = False,
                verdicts: Callable[..., dict] = verdicts_both_orders,
                model: LanguageModel | None = None) -> pd.DataFrame:
    """One judge's verdicts on ``pairs``, two rows per pair (orders AB and BA);
    ``settings``: params.yaml's ``judge`` section (templates, verdict tokens, margins);
    ``verdicts``: how the judge reaches them (``verdicts_both_orders``' signature);
    ``model``: the judge already loaded (``load_judge``), else it is loaded here."""
    model = model or load_judge(judge, progress)
    orders = verdicts(model, judge.mode, settings, pairs["prompt"], pairs["response_a"], pairs["response_b"],
                      seed=seed)
    keep = ["method", "student_base", "prompt_id", "student_a", "student_b", "generator_a", "generator_b"]
    return pd.concat([pairs[keep].assign(judge=judge.name, tier=judge.tier,
                                         related_generator=judge.related_generator or "", mode=judge.mode,
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
