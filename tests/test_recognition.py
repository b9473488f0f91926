"""Recognition of leakage: a judge that truly knows its student is found, one with only a
position bias sits at chance; the generator classifier separates planted styles on held-out
prompts, sits at chance on noise, and never sees a test prompt in training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.recognition import (
    ClassifierSettings,
    accuracy_ci,
    generator_classifier,
    judge_recognition,
    picks,
    recognition_pairs,
    split_prompts,
)
from judgeaudit.audits.stats import BootstrapSettings

BOOT = BootstrapSettings(500, 0.95, 0)


def _responses(n_prompts: int = 40) -> pd.DataFrame:
    rows = []
    for gen, marker in (("gen-x", "Certainly."), ("gen-y", "ok"), ("gen-z", "Hey!")):
        for method in ("sft", "dpo"):
            for i in range(n_prompts):
                rows.append({"student_id": f"s--{gen}--{method}", "student_base": "s", "generator": gen,
                             "method": method, "prompt_id": f"e{i:03d}", "prompt": f"question {i}",
                             "category": "capital", "response": f"{marker} answer {i}"})
    return pd.DataFrame(rows)


def test_a_judge_that_knows_its_student_and_one_that_only_favours_position():
    pairs = recognition_pairs(_responses(), "gen-x")
    assert len(pairs) == 2 * 40 * 2 and (pairs.generator_a == "gen-x").all()
    assert (pairs.generator_b != "gen-x").all()

    def knows(q, a, b):  # answers A when A carries its own house phrase
        return np.array([0.9 if x.startswith("Certainly.") else 0.1 for x in a])

    def position(q, a, b):
        return np.full(len(a), 0.8)

    good = picks(judge_recognition(knows, pairs))
    est = accuracy_ci(good, pairs.prompt_id.to_numpy(), 0.5, BOOT)
    assert est["accuracy"] == 1 and est["p_value"] < 1e-6 and est["n_prompts"] == 40
    blind = judge_recognition(position, pairs)
    assert np.allclose(blind, 0.5)  # both orders averaged: a position bias is no recognition
    est = accuracy_ci(picks(blind), pairs.prompt_id.to_numpy(), 0.5, BOOT)
    assert est["accuracy"] == 0.5 and est["p_value"] == pytest.approx(1.0)


def test_classifier_tells_planted_styles_apart_on_held_out_prompts():
    responses = _responses()
    rng = np.random.default_rng(0)
    centres = {"gen-x": 0, "gen-y": 1, "gen-z": 2}
    styled = rng.normal(0, 1, (len(responses), 8))
    for i, gen in enumerate(responses.generator):
        styled[i, centres[gen]] += 3
    table, pred = generator_classifier(responses, styled, ClassifierSettings(0.5, 1.0, BOOT))
    overall = table[table.scope == "all"].iloc[0]
    assert overall.ci_low > 0.8 and overall.chance == pytest.approx(1 / 3) and overall.n_prompts == 20
    assert set(table[table.scope == "method"].group) == {"sft", "dpo"}
    noise = rng.normal(0, 1, (len(responses), 8))
    table, _ = generator_classifier(responses, noise, ClassifierSettings(0.5, 1.0, BOOT))
    overall = table[table.scope == "all"].iloc[0]
    assert overall.ci_low < 1 / 3 + 0.05 and overall.accuracy < 0.5


def test_split_keeps_each_prompt_on_one_side():
    responses = _responses(10)
    test = split_prompts(responses.prompt_id, 0.3, seed=1)
    sides = pd.Series(test).groupby(responses.prompt_id.to_numpy()).nunique()
    assert (sides == 1).all() and responses.prompt_id[test].nunique() == 3
    assert (split_prompts(responses.prompt_id, 0.3, seed=1) == test).all()
