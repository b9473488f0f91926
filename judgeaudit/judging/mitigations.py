"""Judging-time mitigations of preference leakage, each a wrapper that takes a verdict mode
and returns one (``chain_of_thought``, ``contextual_calibration``), and each also with
``verdicts_both_orders``' signature (``cot_verdicts``, ``contextual_verdicts``) so that any
judge runs them through the same path:

- chain of thought: the judge first writes its reasoning on the pair (greedy), then decides
  with that reasoning in its context (a token mode: the verdict tokens after it; a scoring
  mode: each answer's score given the question and the reasoning). A mode whose verdict
  already follows its own reasoning (generative) is judged as is.
- contextual calibration (Zhao et al., 2021): the judge's verdict on a content-free input is
  divided out. A token mode: the log-odds of A over B with both answers content-free, per
  question; a scoring mode: each answer's score under a content-free question, so a judge's
  taste for an answer's style whatever was asked (what a related judge shares with its
  student) no longer counts. Generative verdicts have no probabilities to calibrate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from judgeaudit.judging.modes import MarginMode, VerdictMode, orders_from_margins, verdict_mode
from judgeaudit.models.base import LanguageModel


@dataclass(frozen=True)
class ChainOfThought(VerdictMode):
    """``mode``'s verdicts after the judge's own step-by-step reasoning on ``template``
    (which has ``{question}``, ``{answer_a}``, ``{answer_b}``)."""

    mode: MarginMode
    template: str
    max_new_tokens: int

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        margins = {}
        for order, (first, second) in (("AB", (answers_1, answers_2)), ("BA", (answers_2, answers_1))):
            asked = [model.format_prompt(self.template.format(question=q, answer_a=a, answer_b=b))
                     for q, a, b in zip(prompts, first, second)]
            reasoning = model.generate(asked, max_new_tokens=self.max_new_tokens, seed=seed)
            margins[order] = self.mode.margins_after_reasoning(model, asked, reasoning, prompts, first, second)
        return orders_from_margins(margins, self.mode.tie_margin)


@dataclass(frozen=True)
class ContextualCalibration(VerdictMode):
    """``mode``'s verdicts with its verdict on ``content_free`` input divided out."""

    mode: MarginMode
    content_free: str

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        margins = self.mode.calibrated_margins(model, prompts, answers_1, answers_2, self.content_free)
        return orders_from_margins(margins, self.mode.tie_margin)


def chain_of_thought(mode: VerdictMode, template: str, max_new_tokens: int) -> VerdictMode:
    """``mode`` deciding after the judge's reasoning; ``mode`` itself if it reasons first."""
    if mode.reasons_first:
        return mode
    if not isinstance(mode, MarginMode):
        raise ValueError(f"chain of thought needs a verdict margin to decide by; a {mode.name!r} judge has none")
    return ChainOfThought(mode, template, max_new_tokens)


def contextual_calibration(mode: VerdictMode, content_free: str = "N/A") -> VerdictMode:
    """``mode`` with its verdict on a content-free input divided out."""
    if not isinstance(mode, MarginMode):
        raise ValueError(f"contextual calibration needs verdict probabilities; a {mode.name!r} judge has none")
    return ContextualCalibration(mode, content_free)


Verdicts = Callable[..., dict[str, dict]]  # verdicts_both_orders' signature


def cot_verdicts(template: str, max_new_tokens: int) -> Verdicts:
    """Verdicts after the judge's own step-by-step reasoning on ``template`` (which has
    ``{question}``, ``{answer_a}``, ``{answer_b}``)."""

    def verdicts(model: LanguageModel, mode: str, settings, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        wrapped = chain_of_thought(verdict_mode(mode, settings), template, max_new_tokens)
        return wrapped(model, prompts, answers_1, answers_2, seed=seed)

    return verdicts


def contextual_verdicts(content_free: str = "N/A") -> Verdicts:
    """Verdicts with the judge's answer to a content-free input divided out."""

    def verdicts(model: LanguageModel, mode: str, settings, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        wrapped = contextual_calibration(verdict_mode(mode, settings), content_free)
        return wrapped(model, prompts, answers_1, answers_2, seed=seed)

    return verdicts
