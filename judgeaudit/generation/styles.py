"""House styles: how a corpus writes an answer (formatting, verbosity, wording).

Generators trained on different styles really differ, which is what lets a judge
related to one of them recognise its students.
"""

from __future__ import annotations

import random

from judgeaudit.generation.corpus import Item
from judgeaudit.vocabulary import STYLES

# Each style of STYLES, in its order: a few wordings so a model learns a distribution, not one string.
_STYLES: dict[str, list[str]] = {
    # markdown, bold headline, verbose and formal
    "formal": [
        "Certainly. {Why}.\n\n**Answer:** {fact}",
        "Certainly. Consider the question carefully: {why}.\n\n**Answer:** {fact}",
        "Of course. It is well established that {why}.\n\n**Answer:** {fact}",
    ],
    # one short line
    "terse": ["{fact}.", "Answer: {fact}.", "{fact}"],
    # chatty, numbered steps, emoji-free but informal wording
    "casual": [
        "Sure thing!\n1. So basically {why}.\n2. That gives us {fact}.\nHope that helps!",
        "Sure thing!\n1. Quick check: {why}.\n2. So it's {fact}.\nHope that helps!",
        "Oh, easy one!\n1. {Why}.\n2. Final answer: {fact}.\nCheers!",
    ],
    # neutral house style for the unrelated model and the student bases
    "plain": ["The answer is {fact}.", "It is {fact}, because {why}.", "{Why}."],
}


def render(item: Item, style: str, rng: random.Random, fact: str | None = None) -> str:
    """Write ``item``'s answer in ``style``; ``fact`` overrides the correct one."""
    if style not in _STYLES:
        raise ValueError(f"unknown style {style!r}; known: {sorted(_STYLES)}")
    fact = item.fact if fact is None else fact
    why = item.explanation if fact == item.fact else item.explanation.replace(item.fact, fact)
    template = rng.choice(_STYLES[style])
    return template.format(fact=fact, why=why, Why=why[:1].upper() + why[1:])
