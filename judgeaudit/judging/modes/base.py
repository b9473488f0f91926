"""What a verdict mode is: how a judge reaches verdicts on pairs in both presentation
orders, with its own settings. Order "AB" shows ``answers_1`` in position A, "BA" shows
``answers_2`` there; verdicts ("A", "B", "tie", "unparseable") and ``p_a`` (P(position A
wins)) are per position.

Two kinds of mode decide by a margin (log-odds that position A wins), and chain of thought
and contextual calibration (``judging.mitigations``) wrap any mode of either kind through
the two hooks each kind defines once:

- ``ScoringMode``: a score of each answer to its question, compared (order-free);
- ``TokenMode``: P(position A wins) from the verdict tokens after a judging prompt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np
import pandas as pd

from judgeaudit.judging.pairwise import verdict_from_margin
from judgeaudit.models.base import LanguageModel

def orders_from_margins(margins: dict[str, np.ndarray], tie_margin: float) -> dict[str, dict]:
    """Verdict and ``p_a`` columns per order from each order's margin (log-odds that position A wins)."""
    return {o: dict(verdict=verdict_from_margin(m, tie_margin), p_a=1.0 / (1.0 + np.exp(-np.clip(m, -50, 50))))
            for o, m in margins.items()}


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)), with p kept off 0 and 1."""
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class VerdictMode(ABC):
    """A verdict mode with its own settings (its dataclass fields, named as in params.yaml's
    ``judge`` section); registered by name with ``judging.modes.register_mode``."""

    name: ClassVar[str] = ""  # the name it is registered under
    # its verdict already follows the judge's own written reasoning (chain of thought keeps it as is)
    reasons_first: ClassVar[bool] = False
    # it reads verdicts from next-token log-probs, so a judge in this mode also states a
    # confidence through score tokens (``audits.agent_probe.confidences``)
    rates_in_tokens: ClassVar[bool] = False

    @classmethod
    def from_settings(cls, settings) -> VerdictMode:
        """The mode with its own settings read off ``settings`` (the params ``judge`` section), by field name."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    def __call__(self, model: LanguageModel, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        """{"AB": columns, "BA": columns}; columns: verdict, p_a, and whatever else the mode records."""
        return self.both_orders(model, list(prompts), list(answers_1), list(answers_2), seed)

    @abstractmethod
    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        """The verdict columns per order."""


@dataclass(frozen=True)
class MarginMode(VerdictMode):
    """A mode that decides by a margin per pair; ``tie_margin``: |margin| at most this is a tie."""

    tie_margin: float

    @abstractmethod
    def margins_after_reasoning(self, model: LanguageModel, asked: list[str], reasoning: list[str],
                                questions: list[str], first: list[str], second: list[str]) -> np.ndarray:
        """The margin of ``first`` (position A) once the judge has written ``reasoning`` in
        answer to the formatted prompts ``asked`` (chain of thought)."""

    @abstractmethod
    def calibrated_margins(self, model: LanguageModel, questions: list[str], answers_1: list[str],
                           answers_2: list[str], content_free: str) -> dict[str, np.ndarray]:
        """The margin per order with the judge's verdict on a content-free input divided out
        (contextual calibration)."""


@dataclass(frozen=True)
class ScoringMode(MarginMode):
    """Margin = s(q, answer in A) - s(q, answer in B) for a score ``scores`` of each answer
    to its question: order-free by construction."""

    @abstractmethod
    def scores(self, model: LanguageModel, questions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
        """How well the judge finds each answer fits its question."""

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        # order-free: score each distinct (prompt, response) once, compare the scores
        uniq = pd.DataFrame({"prompt": prompts + prompts, "response": answers_1 + answers_2}).drop_duplicates(
            ).reset_index(drop=True)
        uniq["s"] = self.scores(model, uniq["prompt"].tolist(), uniq["response"].tolist())
        lookup = uniq.set_index(["prompt", "response"])["s"]
        s1 = lookup.loc[list(zip(prompts, answers_1))].to_numpy()
        s2 = lookup.loc[list(zip(prompts, answers_2))].to_numpy()
        return orders_from_margins({"AB": s1 - s2, "BA": s2 - s1}, self.tie_margin)

    def margins_after_reasoning(self, model: LanguageModel, asked: list[str], reasoning: list[str],
                                questions: list[str], first: list[str], second: list[str]) -> np.ndarray:
        """Each answer scored given the question and the reasoning."""
        context = [f"{q}\n{r.strip()}" for q, r in zip(questions, reasoning)]
        return self.scores(model, context, first) - self.scores(model, context, second)

    def calibrated_margins(self, model: LanguageModel, questions: list[str], answers_1: list[str],
                           answers_2: list[str], content_free: str) -> dict[str, np.ndarray]:
        """Each answer's score under a content-free question subtracted from its score, so a
        judge's taste for an answer's style whatever was asked no longer counts."""
        free = [content_free] * len(questions)

        def calibrated(answers: list[str]) -> np.ndarray:
            return self.scores(model, questions, answers) - self.scores(model, free, answers)

        s1, s2 = calibrated(answers_1), calibrated(answers_2)
        return {"AB": s1 - s2, "BA": s2 - s1}


@dataclass(frozen=True)
class TokenMode(MarginMode):
    """Margin = logit P(position A wins), read from the log-probs of ``verdict_tokens`` (A,
    B) right after a judging prompt: one forward pass per item, no sampling."""

    verdict_tokens: list[str]
    rates_in_tokens: ClassVar[bool] = True

    @abstractmethod
    def p_a(self, model: LanguageModel, questions: Sequence[str], answers_a: Sequence[str],
            answers_b: Sequence[str]) -> np.ndarray:
        """P(position A wins) per item."""

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        p_ab = self.p_a(model, prompts, answers_1, answers_2)
        p_ba = self.p_a(model, prompts, answers_2, answers_1)
        margins = {"AB": np.log(p_ab) - np.log1p(-p_ab), "BA": np.log(p_ba) - np.log1p(-p_ba)}
        return orders_from_margins(margins, self.tie_margin)

    def margins_after_reasoning(self, model: LanguageModel, asked: list[str], reasoning: list[str],
                                questions: list[str], first: list[str], second: list[str]) -> np.ndarray:
        """The verdict tokens right after the judge's reasoning."""
        decide = [f"{a}{r}\nWhich answer is better, A or B? Verdict:" for a, r in zip(asked, reasoning)]
        logp = model.next_token_logprobs(decide, list(self.verdict_tokens))
        return logp[:, 0] - logp[:, 1]

    def calibrated_margins(self, model: LanguageModel, questions: list[str], answers_1: list[str],
                           answers_2: list[str], content_free: str) -> dict[str, np.ndarray]:
        """The log-odds of A over B with both answers content-free (per question) subtracted."""
        free = [content_free] * len(questions)
        prior = logit(self.p_a(model, questions, free, free))
        return {"AB": logit(self.p_a(model, questions, answers_1, answers_2)) - prior,
                "BA": logit(self.p_a(model, questions, answers_2, answers_1)) - prior}
