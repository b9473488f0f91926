"""Pointwise scores from the log-probs of the score tokens, and contrastive decoding.

A judge asked for a score in ``[low, high]`` puts a distribution over the score tokens
(" 1" ... " 5"); one forward pass gives it, no sampling. ``greedy`` takes the arg-max
score, ``expected`` the probability-weighted mean. Contrastive decoding subtracts a
smaller same-family assistant's log-probs, which share the family's preference for
some score tokens but carry less of the quality signal:

    s_cd(k) = (log p_main(k) - lambda * log p_assistant(k)) / t
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import log_softmax, softmax

from judgeaudit.models.base import LanguageModel
from judgeaudit.templates import SCORE_TEMPLATE


def score_tokens(low: int, high: int) -> list[str]:
    """The candidate tokens of a score range, e.g. [" 1", ..., " 5"]."""
    if high <= low:
        raise ValueError(f"score range [{low}, {high}] is empty")
    return [f" {s}" for s in range(low, high + 1)]


def score_logprobs(judge: LanguageModel, questions: Sequence[str], answers: Sequence[str], low: int,
                   high: int, template: str = SCORE_TEMPLATE) -> np.ndarray:
    """[n, high-low+1]: log-probs of each score, renormalised over the range's tokens."""
    prompts = [judge.format_prompt(template.format(low=low, high=high, question=q, answer=a))
               for q, a in zip(questions, answers)]
    return log_softmax(judge.next_token_logprobs(prompts, score_tokens(low, high)), axis=-1)


def greedy(logp: np.ndarray, low: int) -> np.ndarray:
    """The arg-max score of each row."""
    return low + np.argmax(logp, axis=-1)


def expected(logp: np.ndarray, low: int) -> np.ndarray:
    """The probability-weighted score of each row."""
    values = low + np.arange(logp.shape[-1])
    return softmax(logp, axis=-1) @ values


def contrastive(logp_main: np.ndarray, logp_assistant: np.ndarray, lam: float, t: float) -> np.ndarray:
    """Log-probs over the score tokens after contrastive decoding (renormalised)."""
    if t <= 0:
        raise ValueError("temperature must be positive")
    return log_softmax((logp_main - lam * logp_assistant) / t, axis=-1)
