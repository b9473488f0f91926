"""Transforms are pure and do what they say (hypothesis property tests)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from judgeaudit.attacks.transforms import add_prefix, remove_style, strip_format, swap_synonyms

words = st.lists(st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=12)
markup = st.sampled_from(["", "**", "*", "`", "__"])


@given(st.text(max_size=100))
def test_empty_prefix_is_identity(text):
    assert add_prefix(text, "") == text


@given(st.text(max_size=100), st.sampled_from(["I am a woman. ", "I am a man. ", "I am black. "]))
def test_prefix_applied_exactly_once(text, prefix):
    out = add_prefix(text, prefix)
    assert out == prefix + text and out[len(prefix):] == text
    assert out.count(prefix) == (prefix + text).count(prefix)  # added once, nothing else


@given(words, st.lists(markup, min_size=12, max_size=12), st.sampled_from(["", "# ", "## ", "- ", "1. "]))
def test_strip_format_removes_markdown_keeps_words(ws, marks, lead):
    text = lead + " ".join(f"{m}{w}{m}" for w, m in zip(ws, marks))
    out = strip_format(text)
    assert not re.search(r"\*|`|__|^#|^- ", out)
    assert out.split() == ws


@given(st.text(alphabet="abcdefghij ", max_size=60))
def test_wording_and_style_leave_unrelated_text(text):
    assert swap_synonyms(text) == text
    assert remove_style(text) == " ".join(text.split())


def test_ablations_on_house_styles():
    formal = "Certainly. It is well established that the capital of Peru is Lima.\n\n**Answer:** Lima"
    assert strip_format(formal) == "Certainly. It is well established that the capital of Peru is Lima. Answer: Lima"
    assert "Certainly" not in remove_style(formal) and "Lima" in remove_style(formal)
    assert swap_synonyms("The Answer equals 4.") == "The Reply is 4."


@given(st.text(max_size=100))
def test_suffix_markers_append(text):
    assert add_prefix(text, "suffix: (I am a woman.)") == text + " (I am a woman.)"
