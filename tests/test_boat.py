"""BOAT interventions, property-tested: every bag keeps the item answerable and its
label right by construction, and the constraint table holds."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from judgeaudit.audits.boat import JITTERS, ROMAN, SINGLE, apply_bag, sample_bag
from judgeaudit.generation.mcq import MCQ, NONE_LABEL, answer_jitter, make_mcqs, question_jitter

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
    # the other question appended after the item's, without its options
    assert ("only one of them corresponds" in prompt and f"{item.question}\n{OTHER.question}" in prompt) == (
        "distractor_question" in bag)
    assert not any(o in prompt for o in OTHER.options)
    if "answer_removal" in bag:  # one option removed, correct or not; N only when it was the correct one
        assert len(out.options) == len(item.options) - 1 and set(out.options) < set(item.options)
        if correct in out.options:
            assert gold == out.labels[out.answer] and out.options[out.answer] == correct
        else:
            assert out.answer is None and gold == NONE_LABEL
    else:
        assert sorted(out.options) == sorted(item.options) and out.options[out.answer] == correct
        assert gold == out.labels[out.answer] and f"{gold}. {correct}" in prompt
    if "label_replacement" in bag:
        assert out.labels == ROMAN[: len(out.options)] and f"labelled {', '.join(out.labels)}" in prompt


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
    per = summary["per_intervention"]  # the rows whose bag holds it: two runs of at most 12 items
    assert per and all(v["ci_low"] <= v["accuracy"] <= v["ci_high"]
                       and v["n_items"] <= v["n"] <= 2 * v["n_items"] <= 24 for v in per.values())
    bags = set(first["bag"])
    assert all("answer_removal" not in b or "distractor_hint" in b for b in bags)
    from judgeaudit.audits.boat_eval import single_effects, single_runs

    alone = single_runs(tiny_lm, items, runs=2, shots=1, shot_pool=[pool] * len(items), seed=3)
    measured = set(SINGLE) - set(JITTERS)  # no item here has a solution program
    assert len(alone) == 2 * len(measured) * 12 and set(alone.intervention) == measured
    effects = single_effects(alone, first, n_boot=200, confidence=0.95, seed=0)
    assert (effects.n == 12).all() and (effects.delta_ci_low <= effects.delta).all()
    assert ((effects.accuracy - effects.delta).round(9) == round(first.groupby("item").vanilla_correct.mean().mean(), 9)).all()


def test_mcq_items_are_answerable():
    from judgeaudit.generation.mcq import make_mcqs

    for item in make_mcqs(60, 4, ("arithmetic", "capital", "antonym", "colour", "units", "animal")):
        assert len(set(item.options)) == 4 and item.gold in item.labels


def test_label_holds_reads_the_answer_determining_words():
    from judgeaudit.audits.agent_probe import label_holds
    from judgeaudit.generation.corpus import Item

    capital = Item("c", "capital", "What is the capital of France?", "Paris", "")
    assert label_holds(capital, "Could you tell me which city is the capital of France, please?")
    assert not label_holds(capital, "What is the capital of Spain?")
    assert not label_holds(capital, "What is the river of France?")  # the relation word is gone
    sums = Item("a", "arithmetic", "What is 12 plus 30?", "42", "")
    assert label_holds(sums, "Tell me: what is 12 plus 30")
    assert not label_holds(sums, "What is 12 minus 30?") and not label_holds(sums, "What is 12 plus 31?")
    assert not label_holds(sums, "What is 30 plus 12 plus 1?")
    colour = Item("k", "colour", "What colour is the sky on a clear day?", "blue", "")
    assert not label_holds(colour, "What colour is the sky on a cloudy day?")  # a multi-word entity


def test_agent_probe_rewriters(tiny_lm):
    from judgeaudit.audits.agent_probe import boat_rephrase, confidences, label_holds, model_rephrase, rule_rephrase
    from judgeaudit.generation.corpus import make_items

    items = make_items(21, 0)
    assert all(p.holds for p in rule_rephrase(items, seed=0, strength=0.0))
    swapped = rule_rephrase(items, seed=0, strength=1.0)
    assert not any(p.holds for p in swapped) and all(p.label == it.fact for p, it in zip(swapped, items))
    light, heavy = (model_rephrase(tiny_lm, items, s, seed=0) for s in (0.2, 1.0))
    for probes in (light, heavy):
        assert all(p.rewriter == "tiny" and p.holds == label_holds(it, p.question) for p, it in zip(probes, items))
    # every word re-sampled moves more labels than a fifth of them
    assert sum(not p.holds for p in heavy) > sum(not p.holds for p in light) > 0
    assert sum(p.question != it.prompt for p, it in zip(heavy, items)) > len(items) / 2
    prompted = model_rephrase(tiny_lm, items[:4], 0.5, seed=0, mode="prompt", max_new_tokens=8)
    assert [p.item_id for p in prompted] == [it.prompt_id for it in items[:4]] and all(p.question for p in prompted)
    mcqs = make_mcqs(40, 1, ("arithmetic", "capital", "antonym", "colour", "animal"))
    boat = boat_rephrase(mcqs, 1.0, seed=0)
    # BOAT moves the label with the change: the original label often stops holding, the
    # label BOAT records never is wrong
    assert all(p.recorded_ok for p in boat) and 0 < sum(not p.holds for p in boat) < len(boat)
    assert sum(not p.holds for p in boat_rephrase(mcqs, 0.25, seed=0)) < sum(not p.holds for p in boat)
    for mode in ("prompted", "likelihood"):
        conf = confidences(tiny_lm, swapped[:6] + boat[:6], mode)
        assert ((conf >= 1) & (conf <= 10)).all()


def test_recorded_label_check_catches_a_wrong_label():
    from dataclasses import replace

    from judgeaudit.audits.agent_probe import _recorded_ok
    from judgeaudit.audits.boat import answer_removal, distractor_hint, option_shuffling

    items = make_mcqs(10, 2, ("capital", "antonym"))
    item = items[0]
    shuffled = option_shuffling(item, random.Random(3))
    assert _recorded_ok(item, shuffled)
    assert not _recorded_ok(item, replace(shuffled, answer=(shuffled.answer + 1) % 4))
    for seed in range(12):  # the correct option removed (label N) or another one (label moved)
        removed = answer_removal(distractor_hint(item, random.Random(0)), random.Random(seed), items)
        wrong = 0 if removed.answer is None else (removed.answer + 1) % len(removed.options)
        assert _recorded_ok(item, removed) and not _recorded_ok(item, replace(removed, answer=wrong))


def _probe_frame(verdicts: dict[str, list[float]], holds: list[bool], rewriter: str = "rule"):
    import pandas as pd

    return pd.concat([pd.DataFrame({"rewriter": rewriter, "strength": 0.5, "item_id": [f"i{k}" for k in range(len(holds))],
                                    "holds": holds, "recorded_ok": holds, "judge": j, "confidence": c})
                      for j, c in verdicts.items()], ignore_index=True)


def test_probe_rates_against_the_consensus():
    from judgeaudit.audits.agent_probe import probe_rates, rewriter_errors

    holds = [True, False] * 10
    truthful = [9.0 if h else 2.0 for h in holds]
    frame = _probe_frame({"a": truthful, "b": truthful, "yes-man": [9.0] * 20}, holds)
    rates = probe_rates(frame, n_boot=200, confidence=0.95, seed=0).set_index("judge")
    # the yes-man waves every item the others reject through; never rejects what they accept
    assert rates.loc["yes-man", "over_confidence"] == 1.0 and rates.loc["yes-man", "under_confidence"] == 0.0
    assert rates.loc["yes-man", "over_confidence_n"] == 10 and rates.loc["yes-man", "error"] == 0.5
    assert rates.loc["a", "over_confidence"] == 0.0 and rates.loc["consensus", "error"] == 0.0
    # two yes-men out of three: the consensus accepts every broken item
    frame = _probe_frame({"a": truthful, "b": [9.0] * 20, "c": [9.0] * 20}, holds)
    rates = probe_rates(frame, n_boot=200, confidence=0.95, seed=0).set_index("judge")
    assert rates.loc["consensus", "error"] == 0.5 and rates.loc["consensus", "over_confidence"] == 1.0
    errors = rewriter_errors(frame, n_boot=200, confidence=0.95, seed=0).iloc[0]
    assert errors.label_moved == errors.label_error == 0.5 and errors.label_error_n == 20


def test_self_preference_finds_an_agent_lenient_on_its_own_rewrites():
    import pandas as pd

    from judgeaudit.audits.agent_probe import self_preference
    from judgeaudit.audits.stats import BootstrapSettings

    holds = [True, False] * 15
    truthful = [9.0 if h else 2.0 for h in holds]
    frames = [_probe_frame({"ag1": [9.0] * 30, "ag2": truthful, "j": truthful}, holds, "ag1"),
              _probe_frame({"ag1": truthful, "ag2": truthful, "j": truthful}, holds, "ag2")]
    table = pd.concat(frames, ignore_index=True)
    gaps = self_preference(table, settings=BootstrapSettings(200, 0.95, 0)).set_index(["agent", "reference"])
    assert gaps.loc[("ag1", "truth"), "gap"] == 1.0 and gaps.loc[("ag1", "consensus"), "gap"] == 1.0
    assert gaps.loc[("ag2", "truth"), "gap"] == 0.0 and gaps.loc[("ag1", "truth"), "n_own_broken"] == 15


def test_shots_whose_options_all_coincide_still_take_every_intervention(tiny_lm):
    """MMLU's abstract-algebra dev items share one option set: answer removal cannot draw a
    new option from them, so interventions draw from the whole dataset (items and shots)."""
    from judgeaudit.audits.boat_eval import boat_runs, single_runs

    shared = ("True, True", "False, False", "True, False", "False, True")
    pool = [MCQ(f"Statement {k} | ...", shared, k % 4) for k in range(5)]
    items = [MCQ("What is 2 plus 3?", ("5", "6", "7", "8"), 0), MCQ("What is 4 plus 4?", ("9", "8", "7", "6"), 1)]
    runs = boat_runs(tiny_lm, items, runs=3, shots=5, shot_pool=[pool, pool], seed=1)
    alone = single_runs(tiny_lm, items, runs=1, shots=5, shot_pool=[pool, pool], seed=1)
    assert len(runs) == 6 and len(alone) == (len(SINGLE) - len(JITTERS)) * 2  # no item has a program
