"""Length- and style-controlled win rates (the AlpacaEval LC GLM and its style
extension) recover an even contest that a length-loving judge hides."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.length_control import controlled_win_rates, features, gameability, with_differences

CELL = ["method", "student_base", "generator_a", "generator_b"]


def _length_loving_judge(seed: int = 0) -> pd.DataFrame:
    """Two cells of equally good students; in "long" the first student always writes
    more, in "mixed" either may. The judge's verdicts follow length alone."""
    rng = np.random.default_rng(seed)
    rows = []
    for cell, shift in (("long", 25.0), ("mixed", 0.0)):
        for k in range(80):
            dlen = rng.normal(shift, 20.0)
            p = 1 / (1 + np.exp(-2.0 * np.tanh(dlen / 20.0)))
            score = rng.binomial(2, p) / 2  # two presentation orders
            rows.append(dict(judge="j", method="sft", student_base="s", generator_a=cell, generator_b="x",
                             prompt_id=f"p{k}", score=score, d_length=dlen, d_markdown=0.0, d_exclaim=0.0,
                             d_lines=rng.normal()))
    return pd.DataFrame(rows)


def test_length_control_removes_a_length_preference():
    table = controlled_win_rates(_length_loving_judge(), n_boot=100, confidence=0.95, seed=0, cell_cols=CELL)
    long = table[table.generator_a == "long"].set_index("control")
    assert long.loc["raw", "estimate"] > 0.7  # the raw win rate credits length
    for control in ("length", "length+style"):
        row = long.loc[control]
        assert abs(row.estimate - 0.5) < abs(long.loc["raw", "estimate"] - 0.5) / 2
        assert row.ci_low <= 0.5 <= row.ci_high
        assert row.length_slope > 0.5
    assert (table.n == 80).all() and (table.ci_low <= table.estimate).all()


def test_response_features_and_differences():
    f = features("**Answer:** 5\n1. so\n2. yes!")
    assert f["length"] == 6 and f["markdown"] >= 2 and f["exclaim"] == 1 and f["lines"] == 2
    pairs = pd.DataFrame([dict(method="sft", student_base="s", generator_a="a", generator_b="b", prompt_id="p0",
                               response_a="one two three!", response_b="one")])
    scores = pd.DataFrame([dict(judge=j, method="sft", student_base="s", generator_a="a", generator_b="b",
                                prompt_id="p0", score=1.0) for j in ("j1", "j2")])
    out = with_differences(scores, pairs, CELL)
    assert out.d_length.tolist() == [2.0, 2.0] and out.d_exclaim.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="no responses"):
        with_differences(scores.assign(prompt_id="p9"), pairs, CELL)


def test_gameability_is_the_mean_absolute_move_per_judge_and_control():
    clean = pd.DataFrame([dict(judge="j", method="m", student_base="s", generator_a=f"g{k}", generator_b="x",
                               control=c, estimate=0.5) for k in range(4) for c in ("raw", "length")])
    attacked = clean.assign(estimate=np.where(clean.control == "raw", 0.9, 0.55))
    moved = gameability(clean, attacked, n_boot=100, confidence=0.95, seed=0, cell_cols=CELL).set_index("control")
    assert moved.loc["raw", "mean_abs_change"] == pytest.approx(0.4)
    assert moved.loc["length", "mean_abs_change"] == pytest.approx(0.05)
    assert (moved.n == 4).all()
