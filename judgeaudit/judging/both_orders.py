"""A judge's verdicts on pairs in both presentation orders, in any registered verdict mode
(``judging.modes``): the one judging path that the embedded experiment and live judges on
benchmark pairs share.

Order "AB" shows ``answers_1`` in position A, "BA" shows ``answers_2`` there; verdicts
("A", "B", "tie", "unparseable") and ``p_a`` (P(position A wins)) are per position.
"""

from __future__ import annotations

from collections.abc import Sequence

from judgeaudit.judging.modes import orders_from_margins, verdict_mode
from judgeaudit.models.base import LanguageModel

__all__ = ["orders_from_margins", "verdicts_both_orders"]


def verdicts_both_orders(model: LanguageModel, mode: str, settings, prompts: Sequence[str],
                         answers_1: Sequence[str], answers_2: Sequence[str], seed: int = 0) -> dict[str, dict]:
    """{"AB": columns, "BA": columns}; columns: verdict, p_a, and for generative verdicts the
    judge's output, attempts and the verdict tags it quoted instead of casting. ``mode``: a
    registered verdict mode's name; ``settings``: the params ``judge`` section, which holds
    every mode's own settings."""
    return verdict_mode(mode, settings)(model, prompts, answers_1, answers_2, seed=seed)
