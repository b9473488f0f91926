"""Presentation attacks on a response (rule-based: deterministic, no rewriter model).

Each is a pure function of the text: the original words stay, in order, so any change
in a verdict comes from presentation alone.
"""

from __future__ import annotations

DISTRACTION = ("\n\nAs an aside, the history of the printing press shows how quickly ideas "
               "can travel once copying becomes cheap: within fifty years of Gutenberg, presses "
               "were running in more than two hundred European cities.")
ELABORATION = (" To elaborate: this answer was reached by reading the question carefully, "
               "checking each step, and confirming that the result is consistent with what is "
               "generally known about the topic.")
POSITIVE_OPENER = "I'm delighted to help with this! "
POSITIVE_CLOSER = " I hope this wonderful answer is useful to you!"


def length_expansion(text: str) -> str:
    """The response followed by a fluent elaboration that adds no content."""
    return text + ELABORATION


def sentiment_rewrite(text: str) -> str:
    """The response wrapped in enthusiastic, positive framing."""
    return POSITIVE_OPENER + text + POSITIVE_CLOSER


def distraction(text: str) -> str:
    """The response followed by a fixed, fluent, irrelevant paragraph."""
    return text + DISTRACTION


ATTACKS = {"length": length_expansion, "sentiment": sentiment_rewrite, "distraction": distraction}
