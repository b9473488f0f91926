"""The ``prompted`` verdict mode: the log-probs of the verdict tokens right after the judge
prompt (one forward pass, no sampling)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judgeaudit.judging.modes.base import TokenMode
from judgeaudit.judging.modes.registry import register_mode
from judgeaudit.judging.pairwise import prompted_probabilities
from judgeaudit.models.base import LanguageModel


@register_mode("prompted")
@dataclass(frozen=True)
class Prompted(TokenMode):
    """``prompt_template``: the judge prompt, with {question}, {answer_a}, {answer_b}."""

    prompt_template: str

    def p_a(self, model: LanguageModel, questions: Sequence[str], answers_a: Sequence[str],
            answers_b: Sequence[str]) -> np.ndarray:
        return prompted_probabilities(model, self.prompt_template, questions, answers_a, answers_b,
                                      self.verdict_tokens)
