"""Presentation attacks are pure: the original text survives intact, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judgeaudit.attacks.presentation import ATTACKS, distraction


@given(st.text(max_size=200))
def test_distraction_keeps_original_as_prefix(text):
    out = distraction(text)
    assert out.startswith(text) and len(out) > len(text)


@given(st.text(max_size=200), st.sampled_from(sorted(ATTACKS)))
def test_attacks_keep_the_original_and_are_deterministic(text, name):
    out = ATTACKS[name](text)
    assert text in out and out == ATTACKS[name](text) and len(out) > len(text)
