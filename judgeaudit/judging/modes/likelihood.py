"""The ``likelihood`` verdict mode: how likely the judge finds each answer to its question,
the verdict signal of any LM, even one that cannot follow a judging prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from judgeaudit.judging.modes.base import ScoringMode
from judgeaudit.judging.modes.registry import register_mode
from judgeaudit.judging.pairwise import likelihood_scores
from judgeaudit.models.base import LanguageModel


@register_mode("likelihood")
@dataclass(frozen=True)
class Likelihood(ScoringMode):
    """``normalise``: the mean per-token log-prob of the answer ("mean") or its sum ("sum")."""

    normalise: Literal["mean", "sum"]

    def scores(self, model: LanguageModel, questions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
        return likelihood_scores(model, questions, answers, self.normalise)
