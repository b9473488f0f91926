"""A judge's verdicts on pairs in both presentation orders, in any verdict mode: the one
judging path that the embedded experiment and live judges on benchmark pairs share.

Order "AB" shows ``answers_1`` in position A, "BA" shows ``answers_2`` there; verdicts
("A", "B", "tie", "unparseable") and ``p_a`` (P(position A wins)) are per position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.judging.generative import UNPARSEABLE, generative_verdicts
from judgeaudit.judging.pairwise import likelihood_scores, prompted_probabilities, verdict_from_margin
from judgeaudit.models.base import LanguageModel

_P_A = {"A": 1.0, "B": 0.0, "tie": 0.5, UNPARSEABLE: float("nan")}


def verdicts_both_orders(model: LanguageModel, mode: str, settings, prompts: Sequence[str],
                         answers_1: Sequence[str], answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
    """{"AB": columns, "BA": columns}; columns: verdict, p_a, and for generative verdicts the
    judge's output, attempts and the verdict tags it quoted
    instead of casting. ``settings``: the params ``judge`` section."""
    prompts, answers_1, answers_2 = list(prompts), list(answers_1), list(answers_2)
    if mode == "generative":
        orders = {}
        for order, (first, second) in (("AB", (answers_1, answers_2)), ("BA", (answers_2, answers_1))):
            got = generative_verdicts(model, settings.generative_template, prompts, first, second,
                                      max_new_tokens=settings.max_new_tokens,
                                      retry_temperature=settings.retry_temperature, seed=seed)
            orders[order] = dict(verdict=got.verdicts, p_a=[_P_A[v] for v in got.verdicts], attempts=got.attempts,
                                 output=got.outputs, quoted_tags=got.quoted)
        return orders
    if mode == "likelihood":
        # order-free: score each distinct (prompt, response) once, compare the scores
        uniq = pd.DataFrame({"prompt": prompts + prompts, "response": answers_1 + answers_2}).drop_duplicates(
            ).reset_index(drop=True)
        uniq["s"] = likelihood_scores(model, uniq["prompt"].tolist(), uniq["response"].tolist(), settings.normalise)
        lookup = uniq.set_index(["prompt", "response"])["s"]
        s1 = lookup.loc[list(zip(prompts, answers_1))].to_numpy()
        s2 = lookup.loc[list(zip(prompts, answers_2))].to_numpy()
        margins = {"AB": s1 - s2, "BA": s2 - s1}
    elif mode == "prompted":
        args = (model, settings.prompt_template, prompts)
        p_ab = prompted_probabilities(*args, answers_1, answers_2, settings.verdict_tokens)
        p_ba = prompted_probabilities(*args, answers_2, answers_1, settings.verdict_tokens)
        margins = {"AB": np.log(p_ab) - np.log1p(-p_ab), "BA": np.log(p_ba) - np.log1p(-p_ba)}
    else:
        raise ValueError(f"unknown judge mode {mode!r} (likelihood, prompted or generative)")
    return orders_from_margins(margins, settings.tie_margin)


def orders_from_margins(margins: dict[str, np.ndarray], tie_margin: float) -> dict[str, dict]:
    """Verdict and ``p_a`` columns per order from each order's margin (log-odds that position A wins)."""
    return {o: dict(verdict=verdict_from_margin(m, tie_margin), p_a=1.0 / (1.0 + np.exp(-np.clip(m, -50, 50))))
            for o, m in margins.items()}
