"""PLS against a condition (mixing share, student size): a planted linear trend is
recovered with a slope CI that holds it, a flat one reads flat, and the study's mixture
replaces exactly the share of answers it says, on the same prompts for every generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.leakage import pair_scores
from judgeaudit.audits.leakage_trends import cell_arrays, trend
from judgeaudit.audits.stats import BootstrapSettings

BOOT = BootstrapSettings(500, 0.95, 0)


def _arrays(d: float, n: int, rng) -> np.ndarray:
    """One cell: judge i scores i's student 0.5 + d on average, judge j 0.5 - d: PLS = 2d."""
    return np.vstack([rng.random(n) < 0.5 + d, rng.random(n) < 0.5 - d]).astype(float)


def test_planted_linear_trend_recovered_with_its_ci():
    rng = np.random.default_rng(0)
    shares = [0.1, 0.25, 0.5, 0.75, 1.0]
    table, fit = trend({s: _arrays(s / 4, 600, rng) for s in shares}, BOOT)  # PLS = share / 2
    assert list(table.condition) == shares and (table.n == 600).all()
    assert fit["slope_ci_low"] < 0.5 < fit["slope_ci_high"] and fit["slope_ci_low"] > 0.3
    assert fit["r2"] > 0.9 and table.estimate.is_monotonic_increasing
    flat, flat_fit = trend({s: _arrays(0.2, 600, rng) for s in shares}, BOOT)
    assert flat_fit["slope_ci_low"] < 0 < flat_fit["slope_ci_high"]
    with pytest.raises(ValueError, match="different numbers of prompts"):
        trend({0.1: _arrays(0.1, 10, rng), 1.0: _arrays(0.1, 12, rng)}, BOOT)


def test_saturated_points_give_no_r2():
    ones = np.vstack([np.ones(20), np.zeros(20)])
    _, fit = trend({0.5: ones, 1.0: ones}, BOOT)
    assert fit["r2"] is None and fit["slope"] == pytest.approx(0)


def test_cell_arrays_pair_each_cell_with_its_related_judges():
    rows = []
    for judge, prefer in (("Ji", "A"), ("Jj", "B"), ("other", "A")):
        for pid in range(5):
            for order in ("AB", "BA"):
                verdict = prefer if order == "AB" else {"A": "B", "B": "A"}[prefer]
                rows.append(dict(judge=judge, method="sft", student_base="s", generator_a="gi", generator_b="gj",
                                 prompt_id=f"e{pid}", order=order, verdict=verdict))
    roster = [{"judge": "Ji", "related_generator": "gi"}, {"judge": "Jj", "related_generator": "gj"},
              {"judge": "other", "related_generator": None}]
    arrays, prompts = cell_arrays(pair_scores(pd.DataFrame(rows)), roster)
    assert arrays.shape == (2, 5) and prompts == [f"e{i}" for i in range(5)]
    assert (arrays[0] == 1).all() and (arrays[1] == 0).all()  # Ji favours gi's student, Jj gj's


def test_mixture_replaces_the_stated_share_on_shared_prompts():
    from judgeaudit.stages.leakage_studies import mixture

    synthetic = pd.DataFrame([{"generator": g, "prompt_id": f"t{i:03d}", "prompt": f"q{i}", "answer": f"{g} {i}"}
                              for g in ("a", "b") for i in range(400)])
    neutral = pd.Series({f"t{i:03d}": f"neutral {i}" for i in range(400)})
    mix_a, mix_b = (mixture(synthetic, g, neutral, 0.25, seed=3) for g in ("a", "b"))
    assert 0.2 < mix_a.from_generator.mean() < 0.3
    assert (mix_a.from_generator.to_numpy() == mix_b.from_generator.to_numpy()).all()
    assert mix_a.loc[~mix_a.from_generator, "answer"].str.startswith("neutral").all()
    assert mixture(synthetic, "a", neutral, 1.0, seed=3).from_generator.all()
