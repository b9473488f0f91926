"""Judging-time mitigations of preference leakage, with ``verdicts_both_orders``' signature
so that any judge runs them through the same path:

- chain of thought: the judge first writes its reasoning on the pair (greedy), then decides
  with that reasoning in its context (prompted: the verdict tokens after it; likelihood:
  each answer's likelihood given the question and the reasoning). A generative judge's
  template already asks for its explanation before the verdict, so it is judged as is.
- contextual calibration (Zhao et al., 2021): the judge's verdict on a content-free input is
  divided out. Prompted: the log-odds of A over B with both answers content-free, per
  question; likelihood: each answer's likelihood under a content-free question, so a judge's
  taste for an answer's style whatever was asked (what a related judge shares with its
  student) no longer counts. Generative verdicts have no probabilities to calibrate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgeaudit.judging.both_orders import orders_from_margins, verdicts_both_orders
from judgeaudit.judging.pairwise import likelihood_scores, prompted_probabilities
from judgeaudit.models.base import LanguageModel


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p) - np.log1p(-p)


def cot_verdicts(template: str, max_new_tokens: int):
    """Verdicts after the judge's own step-by-step reasoning on ``template`` (which has
    ``{question}``, ``{answer_a}``, ``{answer_b}``)."""

    def verdicts(model: LanguageModel, mode: str, settings, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        if mode == "generative":
            return verdicts_both_orders(model, mode, settings, prompts, answers_1, answers_2, seed=seed)
        prompts, margins = list(prompts), {}
        for order, (first, second) in (("AB", (list(answers_1), list(answers_2))),
                                       ("BA", (list(answers_2), list(answers_1)))):
            asked = [model.format_prompt(template.format(question=q, answer_a=a, answer_b=b))
                     for q, a, b in zip(prompts, first, second)]
            reasoning = model.generate(asked, max_new_tokens=max_new_tokens, seed=seed)
            if mode == "likelihood":
                context = [f"{q}\n{r.strip()}" for q, r in zip(prompts, reasoning)]
                margins[order] = (likelihood_scores(model, context, first, settings.normalise)
                                  - likelihood_scores(model, context, second, settings.normalise))
            elif mode == "prompted":
                decide = [f"{a}{r}\nWhich answer is better, A or B? Verdict:" for a, r in zip(asked, reasoning)]
                logp = model.next_token_logprobs(decide, list(settings.verdict_tokens))
                margins[order] = logp[:, 0] - logp[:, 1]
            else:
                raise ValueError(f"unknown judge mode {mode!r} (likelihood, prompted or generative)")
        return orders_from_margins(margins, settings.tie_margin)

    return verdicts


def contextual_verdicts(content_free: str = "N/A"):
    """Verdicts with the judge's answer to a content-free input divided out."""

    def verdicts(model: LanguageModel, mode: str, settings, prompts: Sequence[str], answers_1: Sequence[str],
                 answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
        prompts, answers_1, answers_2 = list(prompts), list(answers_1), list(answers_2)
        if mode == "likelihood":
            free = [content_free] * len(prompts)

            def calibrated(answers: list[str]) -> np.ndarray:
                return (likelihood_scores(model, prompts, answers, settings.normalise)
                        - likelihood_scores(model, free, answers, settings.normalise))

            s1, s2 = calibrated(answers_1), calibrated(answers_2)
            margins = {"AB": s1 - s2, "BA": s2 - s1}
        elif mode == "prompted":
            args = (model, settings.prompt_template, prompts)
            tokens = settings.verdict_tokens
            prior = _logit(prompted_probabilities(*args, [content_free] * len(prompts),
                                                  [content_free] * len(prompts), tokens))
            margins = {"AB": _logit(prompted_probabilities(*args, answers_1, answers_2, tokens)) - prior,
                       "BA": _logit(prompted_probabilities(*args, answers_2, answers_1, tokens)) - prior}
        else:
            raise ValueError(f"contextual calibration needs verdict probabilities; a {mode!r} judge has none")
        return orders_from_margins(margins, settings.tie_margin)

    return verdicts
