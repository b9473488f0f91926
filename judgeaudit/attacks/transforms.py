"""Text transforms for audits: identity prefixes and suffixes, and the spurious-feature
ablations of the preference-leakage seed (format, style, wording). All pure."""

from __future__ import annotations

import re

_SYNONYMS = {"answer": "reply", "question": "query", "equals": "is", "consider": "examine",
             "carefully": "closely", "established": "known", "quick": "brief", "basically": "essentially",
             "gives": "yields", "helps": "assists", "large": "big", "larger": "bigger", "opposite": "antonym"}
_STYLE_PHRASES = ("Certainly.", "Of course.", "Sure thing!", "Oh, easy one!", "Hope that helps!", "Cheers!",
                  "Consider the question carefully:", "It is well established that", "Quick check:",
                  "So basically", "That gives us", "Final answer:", "So it's")


def add_prefix(text: str, prefix: str) -> str:
    """``prefix`` + ``text``; the empty prefix is the identity. A marker written
    "suffix:TEXT" is appended instead, so a prefix group can hold suffixes too."""
    if prefix.startswith("suffix:"):
        return text + prefix.removeprefix("suffix:")
    return prefix + text


def add_suffix(text: str, suffix: str) -> str:
    return text + suffix


def strip_format(text: str) -> str:
    """Remove markdown (headers, bold/italic markers, list and numbering markers, code
    ticks) and keep every word in order."""
    text = re.sub(r"^\s{0,3}#{1,6}\s*", "", text, flags=re.M)  # headers
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text, flags=re.M)  # list markers
    text = re.sub(r"(\*\*|__|\*|`)", "", text)  # emphasis and code markers
    return re.sub(r"\s+", " ", text).strip()


def remove_style(text: str) -> str:
    """Drop the house-style set phrases (openers, closers, connectives)."""
    for phrase in _STYLE_PHRASES:
        text = text.replace(phrase, " ")
    return re.sub(r"\s+", " ", text).strip()


def swap_synonyms(text: str) -> str:
    """Replace common words by synonyms, keeping capitalisation."""
    def sub(match: re.Match) -> str:
        word = match.group(0)
        repl = _SYNONYMS[word.lower()]
        return repl.capitalize() if word[0].isupper() else repl
    pattern = r"\b(" + "|".join(sorted(_SYNONYMS, key=len, reverse=True)) + r")\b"
    return re.sub(pattern, sub, text, flags=re.I)


ABLATIONS = {"style": remove_style, "format": strip_format, "wording": swap_synonyms}


def paraphrase(text: str) -> str:
    """The rule-based paraphrase: style and format removed and the wording swapped, every
    ablation at once (a configured rewriter model paraphrases instead)."""
    return swap_synonyms(strip_format(remove_style(text)))
