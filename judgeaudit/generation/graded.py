"""Answers of known, graded quality for pointwise-judging studies.

Five levels per item, so a judge's scores can be correlated with a reference it
cannot see: 4 the correct fact explained, 3 the bare correct fact, 2 a hedge
between the correct and a wrong fact, 1 a non-answer, 0 a wrong fact stated with
confidence.
"""

from __future__ import annotations

import random

from judgeaudit.generation.corpus import Item, degrade
from judgeaudit.generation.styles import STYLES, render

LEVELS = 5
_NON_ANSWERS = ("I am not sure about that.", "I do not know.", "That is hard to say.")


def graded_answers(item: Item, rng: random.Random) -> list[tuple[str, int]]:
    """(answer, quality) for each quality level 0..4 of ``item``."""
    wrong = degrade(item, rng)
    pair = [item.fact, wrong]
    rng.shuffle(pair)
    return [
        (render(item, rng.choice(STYLES), rng, fact=wrong), 0),
        (rng.choice(_NON_ANSWERS), 1),
        (f"It is either {pair[0]} or {pair[1]}.", 2),
        (f"{item.fact}.", 3),
        (f"{item.fact}, because {item.explanation}.", 4),
    ]
