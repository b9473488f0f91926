"""Pairwise verdicts with position swap.

Every pair is judged in both orders: "AB" shows the canonical first response (student
of generator_a) in position A, "BA" shows it in position B. ``order_score`` maps a
verdict back onto the canonical first response, and ``combine_orders`` averages the
two orders, so a judge that always says "A" scores every pair 0.5: position bias
cancels rather than leaking into win rates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgeaudit.judging.generative import UNPARSEABLE
from judgeaudit.models.base import LanguageModel

_SCORE_AB = {"A": 1.0, "B": 0.0, "tie": 0.5}


def order_score(verdict: str, order: str) -> float:
    """Score of the canonical first response under one presentation order (nan for an
    unparseable generative verdict: it counts as missing, never as a guess)."""
    if verdict == UNPARSEABLE:
        return float("nan")
    if verdict not in _SCORE_AB:
        raise ValueError(f"unknown verdict {verdict!r}")
    if order == "AB":
        return _SCORE_AB[verdict]
    if order == "BA":
        return 1.0 - _SCORE_AB[verdict]
    raise ValueError(f"unknown order {order!r}")


def combine_orders(verdict_ab: str, verdict_ba: str) -> float:
    """Win score (1, 0.5, 0, or 0.25/0.75 with one tie) of the canonical first response;
    one unparseable order leaves the other's, both leave nan."""
    scores = [s for s in (order_score(verdict_ab, "AB"), order_score(verdict_ba, "BA")) if not np.isnan(s)]
    return float(np.mean(scores)) if scores else float("nan")


def binary_verdict(verdict_ab: str, verdict_ba: str) -> str:
    """One "A"/"B" verdict from both orders; where they disagree, the first order's
    verdict stands (and "A" if that was a tie); "unparseable" if neither order parsed."""
    score = combine_orders(verdict_ab, verdict_ba)
    if np.isnan(score):
        return UNPARSEABLE
    if verdict_ab == UNPARSEABLE:
        verdict_ab = {"A": "B", "B": "A"}.get(verdict_ba, verdict_ba)
    if score != 0.5:
        return "A" if score > 0.5 else "B"
    return verdict_ab if verdict_ab != "tie" else "A"


def verdict_from_margin(margin: np.ndarray, tie_margin: float) -> list[str]:
    """"A" where margin > tie_margin, "B" where < -tie_margin, "unparseable" where it is NaN
    (log-probs the judge's backend could not read: no verdict, never a tie), else "tie"."""
    return [UNPARSEABLE if m != m else "A" if m > tie_margin else "B" if m < -tie_margin else "tie"
            for m in margin]


def likelihood_scores(judge: LanguageModel, questions: Sequence[str], answers: Sequence[str],
                      normalise: str = "mean") -> np.ndarray:
    """How likely the judge finds each answer to its question: the verdict signal of a
    model that cannot follow a judging prompt (order-free by construction)."""
    prompts = [judge.format_prompt(q) for q in questions]
    scored = judge.completion_logprobs(prompts, answers)
    return scored[:, 0] / np.maximum(scored[:, 1], 1) if normalise == "mean" else scored[:, 0]


def prompted_probabilities(judge: LanguageModel, template: str, questions: Sequence[str],
                           answers_a: Sequence[str], answers_b: Sequence[str],
                           verdict_tokens: Sequence[str] = (" A", " B")) -> np.ndarray:
    """P(position A wins) from the log-probs of the verdict tokens after a judging
    prompt: one forward pass per item, no sampling."""
    prompts = [judge.format_prompt(template.format(question=q, answer_a=a, answer_b=b))
               for q, a, b in zip(questions, answers_a, answers_b)]
    logp = judge.next_token_logprobs(prompts, list(verdict_tokens))
    return 1.0 / (1.0 + np.exp(logp[:, 1] - logp[:, 0]))
