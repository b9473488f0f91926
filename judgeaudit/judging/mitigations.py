"""Judging-time mitigations of preference leakage, each a wrapper that takes a verdict mode
and returns one (``prompting``, ``chain_of_thought``, ``contextual_calibration``), and each
also with ``verdicts_both_orders``' signature (``prompting_verdicts``, ``cot_verdicts``,
``contextual_verdicts``) so that any judge runs them through the same path:

- prompting: the judge is told, before each question, that the answers may come from models
  related to it and that it should judge their quality alone; the notice sits inside
  whatever the judge's mode reads (a prompted judge's template, a likelihood judge's context).

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
class Prompting(VerdictMode):
    """``mode``'s verdicts with ``notice`` put before every question."""

    mode: VerdictMode
    notice: str

    def both_orders(self, model: LanguageModel, prompts: list[str], answers_1: list[str], answers_2: list[str],
                    seed: int) -> dict[str, dict]:
        told = [f"{self.notice}\n{q}" for q in prompts]
        return self.mode.both_orders(model, told, answers_1, answers_2, seed)


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


def prompting(mode: VerdictMode, notice: str) -> VerdictMode:
    """``mode`` told, before every question, that the answers may come from related models."""
    if not notice.strip():
        raise ValueError("prompting needs a notice to tell the judge; mitigation.prompting_notice is empty")
    return Prompting(mode, notice)


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


def _as_verdicts(wrap: Callable[[VerdictMode], VerdictMode]) -> Verdicts:
    """``verdicts_both_orders``' signature for the judge's own mode wrapped by ``wrap``."""

    def verdicts(model: LanguageModel, mode: str, settings, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        return wrap(verdict_mode(mode, settings))(model, prompts, answers_1, answers_2, seed=seed)

    return verdicts


def prompting_verdicts(notice: str) -> Verdicts:
    """Verdicts of a judge told that the answers may come from models related to it."""
    return _as_verdicts(lambda mode: prompting(mode, notice))


def cot_verdicts(template: str, max_new_tokens: int) -> Verdicts:
    """Verdicts after the judge's own step-by-step reasoning on ``template`` (which has
    ``{question}``, ``{answer_a}``, ``{answer_b}``)."""
    return _as_verdicts(lambda mode: chain_of_thought(mode, template, max_new_tokens))


def contextual_verdicts(content_free: str = "N/A") -> Verdicts:
    """Verdicts with the judge's answer to a content-free input divided out."""
    return _as_verdicts(lambda mode: contextual_calibration(mode, content_free))
