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


def test_model_rewriter_and_rule_fallback(tiny_lm):
    from judgeaudit.attacks.rewriter import ModelRewriter, attack_texts

    texts = ["Answer: Paris.", "7."]
    assert attack_texts("length", texts) == [ATTACKS["length"](t) for t in texts]
    rewriter = ModelRewriter(tiny_lm, {"length": "Make this longer: {response}"}, max_new_tokens=8)
    out = attack_texts("length", texts, rewriter)
    assert len(out) == 2 and all(isinstance(o, str) and o for o in out)
    assert out == attack_texts("length", texts, rewriter)  # greedy: deterministic
    # no template for distraction: the rule-based attack applies
    assert attack_texts("distraction", texts, rewriter) == [ATTACKS["distraction"](t) for t in texts]
