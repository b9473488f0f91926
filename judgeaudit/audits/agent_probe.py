"""The agents-as-evaluator probe of the unbiased-evaluation seed.

Items are rephrased: half keep their meaning (the label still holds), half have their
key entity or number swapped (the label no longer holds). Every judge states a 1-10
confidence that the label still holds. Per judge: over-confidence = share of broken
items rated >= ``high`` (6), under-confidence = share of intact items rated <= ``low``
(5), each with n and a bootstrap CI; the same for the judges' majority vote
("consensus"), whose error rate is the consensus error.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import mean_ci
from judgeaudit.generation.corpus import ANIMALS, ANTONYMS, CAPITALS, COLOURS, Item
from judgeaudit.models.base import LanguageModel

_POOLS = {"capital": sorted(CAPITALS), "antonym": sorted(ANTONYMS), "colour": sorted(COLOURS),
          "animal": sorted(ANIMALS)}
_FRAMES = ("Could you tell me: {q}", "{q} Please answer briefly.", "Quick question - {q}",
           "I was wondering. {q}")


@dataclass(frozen=True)
class ProbeItem:
    item_id: str
    question: str  # the rephrased question
    label: str  # the original item's answer
    holds: bool  # does the label still answer the rephrased question?


def _swap_entity(item: Item, rng: random.Random) -> str | None:
    """The question with its key entity (or first number) replaced by another."""
    if item.category in _POOLS:
        for entity in sorted(_POOLS[item.category], key=len, reverse=True):
            if entity in item.prompt:
                other = rng.choice([e for e in _POOLS[item.category] if e != entity])
                return item.prompt.replace(entity, other, 1)
        return None
    number = re.search(r"\d+", item.prompt)
    if number is None:
        return None
    return item.prompt[:number.start()] + str(int(number.group()) + rng.choice([5, 7, 11])) + \
        item.prompt[number.end():]


def rule_rephrase(items: list[Item], seed: int) -> list[ProbeItem]:
    """Meaning-keeping rewordings for even positions, entity swaps for odd ones."""
    rng = random.Random(seed)
    out = []
    for k, item in enumerate(items):
        frame = rng.choice(_FRAMES)
        swapped = _swap_entity(item, rng) if k % 2 else None
        question = frame.format(q=swapped if swapped else item.prompt)
        out.append(ProbeItem(item.prompt_id, question, item.fact, holds=swapped is None))
    return out


def confidences(judge: LanguageModel, probes: list[ProbeItem], mode: str = "prompted") -> np.ndarray:
    """1-10 confidence that each label holds: the expected value over the score tokens
    after a rating prompt ("prompted"), or 1 + 9 x the label's likelihood share against a
    fixed refusal ("likelihood", for models that cannot follow the prompt)."""
    if mode == "prompted":
        prompts = [judge.format_prompt(f"Question: {p.question}\nProposed answer: {p.label}\n"
                                       "How confident are you, from 1 to 10, that the proposed answer "
                                       "is correct? Confidence:") for p in probes]
        scores = [str(s) for s in range(1, 11)]
        logp = judge.next_token_logprobs(prompts, [" " + s for s in scores])
        prob = np.exp(logp - logp.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        return prob @ np.arange(1, 11)
    prompts = [judge.format_prompt(p.question) for p in probes]
    lp = judge.completion_logprobs(prompts, [p.label for p in probes])
    alt = judge.completion_logprobs(prompts, ["I do not know."] * len(probes))
    mean_lp, mean_alt = lp[:, 0] / lp[:, 1], alt[:, 0] / alt[:, 1]
    return 1 + 9 / (1 + np.exp(mean_alt - mean_lp))


def probe_rates(conf: pd.DataFrame, *, n_boot: int, confidence: float, seed: int, low: float = 5,
                high: float = 6) -> pd.DataFrame:
    """Per judge, and for the judges' majority ("consensus"): over-confidence,
    under-confidence and error rates, each with n and a bootstrap CI.
    ``conf`` has columns judge, item_id, holds, confidence."""
    votes = conf.assign(says=conf.confidence >= high).groupby("item_id").agg(
        share=("says", "mean"), holds=("holds", "first"))
    groups = [(j, g.confidence.to_numpy() >= high, g.holds.to_numpy()) for j, g in conf.groupby("judge")]
    groups.append(("consensus", votes.share.to_numpy() > 0.5, votes.holds.to_numpy()))
    rows = []
    for judge, says, holds in groups:
        row = {"judge": judge}
        for name, indicator in (("over_confidence", says[~holds]), ("under_confidence", ~says[holds]),
                                ("error", says != holds)):
            if len(indicator) == 0:
                continue
            est = mean_ci(indicator.astype(float), n_boot=n_boot, confidence=confidence, seed=seed)
            row.update({name: est.estimate, f"{name}_ci_low": est.ci_low,
                        f"{name}_ci_high": est.ci_high, f"{name}_n": est.n})
        rows.append(row)
    return pd.DataFrame(rows)
