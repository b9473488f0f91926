"""BOAT interventions, property-tested: every bag keeps the item answerable and its
label right by construction, and the constraint table holds."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from judgeaudit.audits.boat import SINGLE, apply_bag, sample_bag
from judgeaudit.generation.mcq import MCQ, NONE_LABEL, answer_jitter, question_jitter

option_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=12)


@st.composite
def mcqs(draw) -> MCQ:
    options = draw(st.lists(option_text, min_size=2, max_size=6, unique=True))
    answer = draw(st.integers(0, len(options) - 1))
    return MCQ("What is it?", tuple(options), answer, labels=tuple("ABCDEF"[: len(options)]))


OTHER = MCQ("Which one is a prime number?", ("x4", "x6", "x7", "x9"), 2)  # options outside option_text


@given(mcqs(), st.integers(0, 10_000))
@settings(max_examples=300, deadline=None)
def test_bags_keep_the_label_right(item, seed):
    rng = random.Random(seed)
    bag = sample_bag(rng)
    out = apply_bag(item, bag, rng, [item, OTHER])
    correct = item.options[item.answer]
    queries = out.queries()
    assert all(item.question in prompt for prompt, _, _ in queries)
    if "binary_transformation" in bag:  # true/false for every option, the correct one True
        assert bag == ("binary_transformation",) and len(queries) == len(item.options)
        assert [gold for _, _, gold in queries] == ["True" if o == correct else "False" for o in out.options]
        assert all(cands == ("True", "False") and f"Option: {o}" in q for (q, cands, _), o in zip(queries, out.options))
        return
    (prompt, candidates, gold), = queries
    assert len(set(out.labels)) == len(out.labels) == len(out.options)
    assert (NONE_LABEL in candidates) == ("distractor_hint" in bag)
    assert ("reply N" in prompt) == ("distractor_hint" in bag)
    assert ("Answer only the last one" in prompt and OTHER.question in prompt) == ("distractor_question" in bag)
    if "answer_removal" in bag:  # the correct option swapped for another question's: N is the answer
        assert out.answer is None and gold == NONE_LABEL and correct not in out.options
        assert sorted(o for o in out.options if o not in OTHER.options) == sorted(o for o in item.options if o != correct)
        assert sum(o in OTHER.options for o in out.options) == 1
    else:
        assert sorted(out.options) == sorted(item.options) and out.options[out.answer] == correct
        assert gold == out.labels[out.answer] and f"{gold}. {correct}" in prompt
    if "label_replacement" in bag:
        assert f"labelled {', '.join(out.labels)}" in prompt


def test_interventions_need_other_questions_of_the_dataset():
    item = MCQ("q", ("a", "b"), 0, labels=("A", "B"))
    with pytest.raises(ValueError, match="other questions"):
        apply_bag(item, ("distractor_question",), random.Random(0), [item])
    with pytest.raises(ValueError, match="reserved"):
        MCQ("q", ("a", "b"), 0, labels=("A", "N"))
    with pytest.raises(ValueError, match="hint"):
        MCQ("q", ("a", "b"), None)


def test_constraint_table_and_probabilities():
    rng = random.Random(0)
    bags = [sample_bag(rng) for _ in range(20_000)]
    counts = Counter(name for bag in bags for name in bag)
    for bag in bags:
        assert "binary_transformation" not in bag or len(bag) == 1
        assert "answer_removal" not in bag or "distractor_hint" in bag
    n = len(bags)
    assert abs(counts["binary_transformation"] / n - 0.1) < 0.01
    assert abs(counts["option_shuffling"] / n - 0.45) < 0.015  # 0.5 of the 90% without BT
    assert abs(counts["answer_removal"] / n - 0.225) < 0.015  # 0.5 of those with a hint
    few_shot = Counter(name for _ in range(20_000) for name in sample_bag(rng, answer_removal_scale=0.5))
    assert abs(few_shot["answer_removal"] / n - 0.1125) < 0.01  # halved for few-shot examples


def test_illegal_bags_rejected():
    item = MCQ("q", ("a", "b"), 0, labels=("A", "B"))
    for bag in (("answer_removal",), ("binary_transformation", "option_shuffling")):
        try:
            apply_bag(item, bag, random.Random(0))
        except ValueError:
            continue
        raise AssertionError(f"{bag} accepted")


@given(st.integers(2, 99), st.integers(2, 99), st.integers(0, 1000))
def test_question_jitter_relabels(a, b, seed):
    text, answer = question_jitter(f"What is {a} plus {b}?", lambda x, y: x + y, random.Random(seed))
    x, y = (int(t) for t in text.removeprefix("What is ").removesuffix("?").split(" plus "))
    assert answer == x + y and (x, y) != (a, b)


@given(st.integers(-1000, 1000), st.integers(0, 1000))
def test_answer_jitter_contains_answer_once(answer, seed):
    item = answer_jitter(answer, random.Random(seed))
    assert item.options[item.answer] == str(answer)
    assert len(set(item.options)) == 4


def test_boat_runs_on_a_real_tiny_model(tiny_lm):
    from judgeaudit.audits.boat_eval import boat_runs, boat_summary
    from judgeaudit.generation.mcq import make_mcqs

    items = make_mcqs(12, 0, ("arithmetic", "capital", "antonym", "colour"))
    pool = make_mcqs(10, 1, ("capital", "colour"))
    first = boat_runs(tiny_lm, items, runs=2, shots=1, shot_pool=pool, seed=3)
    second = boat_runs(tiny_lm, items, runs=2, shots=1, shot_pool=pool, seed=3)
    assert first.equals(second) and len(first) == 24
    summary = boat_summary(first, n_boot=200, confidence=0.95, seed=0)
    assert sum(summary["confusion"].values()) == 24
    assert 0 <= summary["boat"]["ci_low"] <= summary["boat"]["accuracy"] <= summary["boat"]["ci_high"] <= 1
    bags = set(first["bag"])
    assert all("answer_removal" not in b or "distractor_hint" in b for b in bags)
    from judgeaudit.audits.boat_eval import single_effects, single_runs

    alone = single_runs(tiny_lm, items, runs=2, shots=1, shot_pool=[pool] * len(items), seed=3)
    measured = set(SINGLE) - {"question_jitter"}  # no item here has a solution program
    assert len(alone) == 2 * len(measured) * 12 and set(alone.intervention) == measured
    effects = single_effects(alone, first, n_boot=200, confidence=0.95, seed=0)
    assert (effects.n == 12).all() and (effects.delta_ci_low <= effects.delta).all()
    assert ((effects.accuracy - effects.delta).round(9) == round(first.groupby("item").vanilla_correct.mean().mean(), 9)).all()


def test_mcq_items_are_answerable():
    from judgeaudit.generation.mcq import make_mcqs

    for item in make_mcqs(60, 4, ("arithmetic", "capital", "antonym", "colour", "units", "animal")):
        assert len(set(item.options)) == 4 and item.gold in item.labels


def test_agent_probe_rules_and_rates(tiny_lm):
    import pandas as pd

    from judgeaudit.audits.agent_probe import confidences, probe_rates, rule_rephrase
    from judgeaudit.generation.corpus import make_items

    items = make_items(20, 0)
    probes = rule_rephrase(items, seed=0)
    assert [p.holds for p in probes[:4]] == [True, False, True, False]
    for item, probe in zip(items, probes):
        if probe.holds:
            assert item.prompt in probe.question
        else:
            assert item.prompt not in probe.question and probe.label == item.fact
    for mode in ("prompted", "likelihood"):
        conf = confidences(tiny_lm, probes, mode)
        assert ((conf >= 1) & (conf <= 10)).all()
    # a judge that trusts everything is over-confident on every broken item, never under-confident
    frame = pd.DataFrame({"judge": "yes-man", "item_id": [p.item_id for p in probes],
                          "holds": [p.holds for p in probes], "confidence": 9.0})
    rates = probe_rates(frame, n_boot=200, confidence=0.95, seed=0).set_index("judge")
    assert rates.loc["yes-man", "over_confidence"] == 1.0
    assert rates.loc["yes-man", "under_confidence"] == 0.0
    assert rates.loc["consensus", "error"] == 0.5 and rates.loc["yes-man", "error_n"] == 20


def test_shots_whose_options_all_coincide_still_take_every_intervention(tiny_lm):
    """MMLU's abstract-algebra dev items share one option set: answer removal cannot draw a
    new option from them, so interventions draw from the whole dataset (items and shots)."""
    from judgeaudit.audits.boat_eval import boat_runs, single_runs

    shared = ("True, True", "False, False", "True, False", "False, True")
    pool = [MCQ(f"Statement {k} | ...", shared, k % 4) for k in range(5)]
    items = [MCQ("What is 2 plus 3?", ("5", "6", "7", "8"), 0), MCQ("What is 4 plus 4?", ("9", "8", "7", "6"), 1)]
    runs = boat_runs(tiny_lm, items, runs=3, shots=5, shot_pool=[pool, pool], seed=1)
    alone = single_runs(tiny_lm, items, runs=1, shots=5, shot_pool=[pool, pool], seed=1)
    assert len(runs) == 6 and len(alone) == (len(SINGLE) - 1) * 2  # question jitter: no item has a program
