"""BOAT as its paper defines it: answer removal of any option, the shots under the test
item's bag, GSM8K's vanilla answer generated, and the agents-as-evaluator probe read by
the other judges' mean score, with the per-subject correlation (the paper's Table 1)."""

from __future__ import annotations

import random
from collections import Counter

import pandas as pd
import pytest

from judgeaudit.audits.boat import ROMAN, answer_removal, apply_bag, distractor_hint
from judgeaudit.generation.mcq import MCQ, NONE_LABEL, make_mcqs


def test_answer_removal_removes_any_option_evenly():
    item = distractor_hint(MCQ("q", ("a", "b", "c", "d"), 2), random.Random(0))
    gone = Counter()
    for seed in range(4000):
        out = answer_removal(item, random.Random(seed))
        (missing,) = set(item.options) - set(out.options)
        gone[missing] += 1
        assert (out.gold == NONE_LABEL) == (missing == "c")
        assert out.gold == NONE_LABEL or out.options[out.answer] == "c"
    # each option about a quarter of the time: the answer is N on a quarter of the items only
    assert set(gone) == set("abcd") and all(abs(v / 4000 - 0.25) < 0.03 for v in gone.values())


def test_shots_carry_the_items_bag_or_their_own():
    from judgeaudit.audits.boat_eval import _intervened_shots

    dataset = make_mcqs(30, 3, ("capital", "antonym", "colour"))
    bag = ("distractor_hint", "label_replacement")
    same = _intervened_shots(dataset[:5], bag, random.Random(0), dataset, "same", "question_jitter")
    assert all(s.none_allowed and s.labels == ROMAN[:4] for s in same)
    own = _intervened_shots(dataset[:12], bag, random.Random(0), dataset, "independent", "question_jitter")
    assert len({(s.none_allowed, s.labels) for s in own}) > 1  # each shot its own bag
    with pytest.raises(ValueError, match="shot_bags"):
        _intervened_shots(dataset[:1], bag, random.Random(0), dataset, "mixed", "question_jitter")


def test_first_number_reads_the_generated_answer():
    from judgeaudit.audits.boat_eval import first_number

    assert first_number(" 1,250 eggs\n") == 1250 and first_number("It is -3.") == -3
    assert first_number("no idea") is None and first_number("18 then 20") == 18


def test_generated_vanilla_on_gsm8k_items(tiny_lm):
    from pathlib import Path

    from judgeaudit.audits.boat_eval import boat_runs, generate_correct
    from judgeaudit.sources.mcq_benchmarks import read_gsm8k

    found = read_gsm8k(Path(__file__).parent / "data" / "gsm8k", n_items=4, seed=0)
    right = generate_correct(tiny_lm, found.items, [[] for _ in found.items], max_new_tokens=6)
    assert len(right) == 4 and all(isinstance(r, bool) for r in right)
    # an echo model that replies with the gold number is always right: exact match on the number
    class Echo:
        def format_prompt(self, text):
            return text

        def generate(self, prompts, **_):
            return [f" {it.options[it.answer]} is it" for it in found.items]

    assert generate_correct(Echo(), found.items, [[] for _ in found.items]) == [True] * 4
    runs = boat_runs(tiny_lm, found.items, runs=2, shots=1, shot_pool=found.shot_pools, seed=0,
                     vanilla="generate", max_new_tokens=6)
    assert len(runs) == 8 and set(runs.vanilla_correct) <= {True, False}
    with pytest.raises(ValueError, match="vanilla"):
        boat_runs(tiny_lm, found.items, runs=1, vanilla="logprob")


def _scores(judges: dict[str, list[float]], holds: list[bool], categories=None, rewriter="rule") -> pd.DataFrame:
    cats = categories or ["x"] * len(holds)
    return pd.concat([pd.DataFrame({"rewriter": rewriter, "strength": 1.0, "item_id": [f"i{k}" for k in range(len(holds))],
                                    "holds": holds, "recorded_ok": holds, "category": cats, "judge": j,
                                    "confidence": c}) for j, c in judges.items()], ignore_index=True)


def test_consensus_rates_against_the_other_judges_mean():
    from judgeaudit.audits.agent_consensus import consensus_rates

    holds = [True, False] * 10
    truthful = [9.0 if h else 2.0 for h in holds]
    frame = _scores({"a": truthful, "b": truthful, "yes-man": [9.0] * 20}, holds)
    rates = consensus_rates(frame, n_boot=200, confidence=0.95, seed=0).set_index("judge")
    # a and b (mean 2) call the broken items wrong; the yes-man scores them 9: over-confident
    assert rates.loc["yes-man", "over_confidence"] == 1.0 and rates.loc["yes-man", "over_confidence_n"] == 10
    assert rates.loc["yes-man", "under_confidence"] == 0.0
    # a's others are b (2) and the yes-man (9): mean 5.5 on broken items, neither <= 5 nor >= 6
    assert "over_confidence" not in rates.columns or pd.isna(rates.loc["a", "over_confidence"])
    assert rates.loc["a", "under_confidence"] == 0.0 and rates.loc["a", "under_confidence_n"] == 10
    # consensus: the mean of all three, 13/3 <= 5 on the broken items: half the items called wrong
    assert rates.loc["consensus", "consensus_error"] == 0.5 and rates.loc["consensus", "truth_error"] == 0.0
    assert rates.loc["judges", "over_confidence"] == 1.0 and rates.loc["judges", "over_confidence_n"] == 10
    lenient = _scores({"a": [9.0] * 20, "b": [8.0] * 20}, holds)
    cons = consensus_rates(lenient, n_boot=200, confidence=0.95, seed=0).set_index("judge").loc["consensus"]
    assert cons.consensus_error == 0.0 and cons.truth_error == 0.5  # lenient judges miss the broken ones


def test_subject_correlation_of_data_bias_and_accuracy():
    from judgeaudit.audits.agent_consensus import subject_correlation

    cats = [c for c in "abcd" for _ in range(10)]
    bias = {"a": 0.1, "b": 0.3, "c": 0.6, "d": 0.9}  # share of each subject's items called wrong
    scores = [2.0 if k % 10 < 10 * bias[c] else 9.0 for k, c in enumerate(cats)]
    frame = _scores({"j1": scores, "j2": scores}, [True] * 40, cats)
    accuracy = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.2}
    out = subject_correlation(frame, accuracy, n_boot=200, confidence=0.95, seed=0)
    assert out["n"] == 4 and out["r"] < -0.95 and out["ci_low"] <= out["r"] <= out["ci_high"]
    assert {s["category"]: round(s["data_bias"], 2) for s in out["subjects"]} == bias
    flat = subject_correlation(frame, dict.fromkeys("abcd", 0.5), n_boot=200, confidence=0.95, seed=0)
    assert flat["r"] is None  # constant accuracy: undefined, not a number


def test_strength_as_the_probability_an_item_is_rephrased(tiny_lm):
    from judgeaudit.audits.agent_probe import boat_rephrase, model_rephrase
    from judgeaudit.generation.corpus import make_items

    items = make_items(20, 0)
    none = model_rephrase(tiny_lm, items, 0.0001, seed=0, strength_as="probability")
    assert all(p.question == it.prompt and p.holds for p, it in zip(none, items))
    every = model_rephrase(tiny_lm, items, 1.0, seed=0, strength_as="probability", share=0.5)
    assert sum(p.question != it.prompt for p, it in zip(every, items)) > len(items) / 2
    assert all(p.strength == 1.0 and p.category == it.category for p, it in zip(every, items))
    mcqs = make_mcqs(40, 1, ("capital", "antonym", "colour"))
    light = boat_rephrase(mcqs, 0.25, seed=0, strength_as="probability")
    assert sum(p.question != m.render() for p, m in zip(light, mcqs)) < 0.5 * len(mcqs)


def test_paper_rows_for_every_main_table():
    from judgeaudit.report.boat_paper import boat_paper_rows
    from judgeaudit.report.paper_rows import check_row

    est = {"accuracy": 0.2, "ci_low": 0.1, "ci_high": 0.3, "n": 8}
    summary = {"clean": {"drop": est}, "contaminated": {"drop": est},
               "single": [{"model": "clean", "benchmark": "generated", "intervention": "answer_removal",
                           "delta": -0.1, "delta_ci_low": -0.2, "delta_ci_high": 0.0, "n": 8}],
               "probe": {"rule": "paper", "agents": [], "judges": ["a", "b"], "strength_as": "probability",
                         "rates": [{"rewriter": "rule", "strength": 1.0, "judge": "consensus", "consensus_error": 0.4,
                                    "consensus_error_ci_low": 0.3, "consensus_error_ci_high": 0.5,
                                    "consensus_error_n": 14},
                                   {"rewriter": "rule", "strength": 1.0, "judge": "judges", "over_confidence": 0.5,
                                    "over_confidence_ci_low": 0.2, "over_confidence_ci_high": 0.8,
                                    "over_confidence_n": 6}],
                         "table1": {"r": -0.5, "ci_low": -0.9, "ci_high": 0.4, "n": 5}}}
    rows = [check_row(r) for r in boat_paper_rows(summary)]
    tables = Counter(r["table"] for r in rows)
    assert set(tables) == {"Main results (vanilla vs BOAT)", "Each intervention alone",
                           "Probing task (agents as evaluators)", "Table 1"}
    assert all(r["paper_value"] is None and r["overlay"] == "params-gpu.yaml boat" for r in rows)
    assert [r["ours"] for r in rows if r["table"] == "Table 1"] == [-0.5]


def test_each_intervention_alone_against_the_mcq_not_the_generated_vanilla(tiny_lm):
    """GSM8K's vanilla is generated; the interventions are scored as MCQs by log-probabilities.
    An intervention that changes nothing must change nothing, whatever the two formats score."""
    from pathlib import Path

    from judgeaudit.audits.boat_eval import (boat_runs, boat_summary, generate_correct, predict, single_effects,
                                             single_runs)
    from judgeaudit.sources.mcq_benchmarks import read_gsm8k

    found = read_gsm8k(Path(__file__).parent / "data" / "gsm8k", n_items=8, seed=0)
    runs = boat_runs(tiny_lm, found.items, runs=1, vanilla="generate", max_new_tokens=6)
    no_shots = [[] for _ in found.items]
    generated = generate_correct(tiny_lm, found.items, no_shots, max_new_tokens=6)
    mcq = predict(tiny_lm, found.items, no_shots)
    assert runs.vanilla_correct.tolist() == generated and sum(generated) != sum(mcq)  # the formats score apart
    # the empty bag, scored as every intervention is: delta 0 exactly
    rng = random.Random(0)
    unchanged = [apply_bag(item, (), rng, found.items) for item in found.items]
    alone = pd.DataFrame({"run": 0, "intervention": "nothing", "item": range(len(found.items)),
                          "correct": predict(tiny_lm, unchanged, no_shots)})
    stats = dict(n_boot=200, confidence=0.95, seed=0)
    nothing = single_effects(alone, runs, **stats).iloc[0]
    assert nothing.delta == 0 and nothing.delta_ci_low == nothing.delta_ci_high == 0
    assert nothing.accuracy == sum(mcq) / len(mcq) and runs.vanilla_mcq_correct.tolist() == mcq
    # the generated vanilla stays the summary's (the paper's) vanilla figure
    assert boat_summary(runs, **stats)["vanilla"]["accuracy"] == sum(generated) / len(generated)
    # and every intervention's change is from the MCQ baseline over the items it was applied to
    each = single_runs(tiny_lm, found.items, runs=1, seed=0)
    effects = single_effects(each, runs, **stats).set_index("intervention")
    base = runs.set_index("item").vanilla_mcq_correct.astype(float)
    for name, g in each.groupby("intervention"):
        assert effects.loc[name, "accuracy"] - effects.loc[name, "delta"] == pytest.approx(base[g.item].mean())
