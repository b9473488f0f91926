"""The ``generative`` verdict mode: the judge writes its reasoning and a final "[[A]]",
"[[B]]" or "[[C]]" tag, parsed strictly (``judging.generative``: exactly one distinct tag of
the judge's own, outside quoted or echoed text); its verdicts carry no probabilities, so
``p_a`` is 1, 0, 0.5 or nan (unparseable, its reason in ``unparseable_reason``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from judgeaudit.judging.generative import UNPARSEABLE, generative_verdicts
from judgeaudit.judging.modes.base import VerdictMode
from judgeaudit.judging.modes.registry import register_mode
from judgeaudit.models.base import LanguageModel

_P_A = {"A": 1.0, "B": 0.0, "tie": 0.5, UNPARSEABLE: float("nan")}


@register_mode("generative")
@dataclass(frozen=True)
class Generative(VerdictMode):
    """``generative_template``: the judge prompt ({question}, {answer_a}, {answer_b});
    ``max_new_tokens``: room for the reasoning; ``retry_temperature``: the one sampled retry
    of an unparseable output."""

    generative_template: str
    max_new_tokens: int
    retry_temperature: float
    reasons_first: ClassVar[bool] = True  # its template asks for the explanation before the verdict

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        """Verdict, p_a, the judge's output, its attempts, the verdict tags it quoted instead of
        casting, and why a verdict is unparseable (None where it parsed)."""
        orders = {}
        for order, (first, second) in (("AB", (answers_1, answers_2)), ("BA", (answers_2, answers_1))):
            got = generative_verdicts(model, self.generative_template, prompts, first, second,
                                      max_new_tokens=self.max_new_tokens,
                                      retry_temperature=self.retry_temperature, seed=seed)
            orders[order] = dict(verdict=got.verdicts, p_a=[_P_A[v] for v in got.verdicts], attempts=got.attempts,
                                 output=got.outputs, quoted_tags=got.quoted,
                                 unparseable_reason=got.reasons)
        return orders
