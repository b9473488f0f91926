"""Judge against judge on the same pairs (audits/judge_comparison.py): the exact paired test,
Holm's adjustment, and planted gaps found where independent CIs cannot tell them apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgeaudit.audits.judge_comparison import compare_judges, holm, sign_flip_p
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources.judgment_table import COLUMNS

FAST = BootstrapSettings(n_boot=400, confidence=0.95, seed=0)
OTHER = {"1": "2", "2": "1"}


@pytest.mark.parametrize("seed", range(4))
def test_sign_flip_p_is_the_exhaustive_permutation_test(seed):
    """Scores in half points (one order right of two): the same p as scipy's permutation test
    over all 2^n sign patterns."""
    rng = np.random.default_rng(seed)
    x, y = rng.choice([0, 0.5, 1], 15, p=[0.2, 0.3, 0.5]), rng.choice([0, 0.5, 1], 15, p=[0.4, 0.3, 0.3])
    exhaustive = stats.permutation_test((x, y), lambda u, v, axis: (u - v).sum(axis), permutation_type="samples",
                                        n_resamples=np.inf, vectorized=True).pvalue
    assert sign_flip_p(x - y) == pytest.approx(exhaustive, abs=1e-12)


def test_sign_flip_p_on_one_order_is_mcnemars_exact_test():
    d = np.r_[np.ones(30), -np.ones(15), np.zeros(40)]
    assert sign_flip_p(d) == pytest.approx(stats.binomtest(30, 45).pvalue, abs=1e-12)
    assert sign_flip_p(np.zeros(10)) == 1.0
    with pytest.raises(ValueError, match="multiples of 1/2"):
        sign_flip_p(np.array([0.3, -0.5]))


def test_holm_is_the_step_down_rule():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04 -> running max
    assert holm(np.array([0.01, 0.04, 0.03, 0.005])) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm(np.array([0.02, 0.9])) == pytest.approx([0.04, 0.9])
    assert holm(np.array([0.5, 0.9])) == pytest.approx([1.0, 1.0])  # never below a smaller p's


def _table(right: dict[str, np.ndarray], n: int, seed: int = 0) -> pd.DataFrame:
    """Judges on n labelled pairs in both orders; ``right[judge][i, order]``: its verdict on
    item i in that order is the label's."""
    rng = np.random.default_rng(seed)
    label = rng.choice(["1", "2"], n)
    rows = []
    for i in range(n):
        item = {"source": "synthetic", "subset": "all", "item_id": str(i), "prompt": "q", "response_1": "a",
                "response_2": "b", "model_1": None, "model_2": None, "strategy": "default", "p_1": None,
                "label": label[i], "human_labels": None, "raw_output": None}
        for judge, hits in right.items():
            for k, order in enumerate(("1", "2")):
                verdict = label[i] if hits[i, k] else OTHER[label[i]]
                rows.append({**item, "judge": judge, "order": order, "verdict": verdict})
    return pd.DataFrame(rows, columns=COLUMNS)


def test_a_planted_gap_is_found_and_a_null_one_is_not():
    rng = np.random.default_rng(1)
    n = 300
    fair = rng.random((n, 2)) < 0.65
    right = {"good": rng.random((n, 2)) < 0.85, "fair": fair, "fair2": fair[rng.permutation(n)]}  # same rate
    comparison = compare_judges(_table(right, n), FAST).set_index(["judge_a", "judge_b"])
    for other in ("fair", "fair2"):
        row = comparison.loc[("good", other)]  # A is the more accurate judge
        assert row.n == n and row.significant and row.p_holm < 1e-3
        assert row.ci_low > 0.1 and row.difference == pytest.approx(right["good"].mean() - right[other].mean())
    null = comparison.loc[next(k for k in comparison.index if set(k) == {"fair", "fair2"})]
    assert not null.significant and null.ci_low < 0 < null.ci_high
    assert (comparison.difference >= 0).all() and (comparison.p_holm >= comparison.p_value).all()


def test_the_test_keeps_its_level_under_the_null():
    """Two equally accurate judges (each order right with p = 0.7, independently): the exact
    test rejects at 5% in at most about 5% of 400 draws, and not never (it has power to lose)."""
    rng = np.random.default_rng(4)
    rejected = [sign_flip_p((rng.random((150, 2)) < 0.7).mean(1) - (rng.random((150, 2)) < 0.7).mean(1)) < 0.05
                for _ in range(400)]
    assert 0.01 < np.mean(rejected) <= 0.07


def test_pairing_finds_a_gap_the_report_cards_cis_cannot():
    """B copies A but loses 24 of the pairs A had right, in both orders: the two accuracy CIs of
    the report card overlap, and the paired comparison on the same pairs tells them apart."""
    from judgeaudit.audits.judge_quality import report_card

    rng = np.random.default_rng(2)
    n = 300
    a = np.repeat(rng.random((n, 1)) < 0.7, 2, axis=1)
    b = a.copy()
    b[np.flatnonzero(a[:, 0])[:24]] = False
    table = _table({"A": a, "B": b}, n)
    card = report_card(table, FAST)
    acc = card[card.metric == "accuracy"].set_index("judge")
    assert acc.loc["B", "ci_high"] > acc.loc["A", "ci_low"]  # overlapping CIs
    row = compare_judges(table, FAST).iloc[0]
    assert (row.judge_a, row.judge_b, row.a_better, row.b_better) == ("A", "B", 24, 0)
    assert row.difference == pytest.approx(acc.loc["A", "estimate"] - acc.loc["B", "estimate"])
    assert row.significant and row.ci_low > 0


def test_only_the_pairs_both_judged_count():
    rng = np.random.default_rng(3)
    n = 120
    table = _table({"A": rng.random((n, 2)) < 0.9, "B": rng.random((n, 2)) < 0.5}, n)
    table = table[~((table.judge == "B") & (table.item_id.astype(int) < 20))]  # B skipped 20 pairs
    chosen = pd.DataFrame({"source": ["synthetic"] * 2, "judge": ["A", "B"], "strategy": ["default"] * 2})
    row = compare_judges(table, FAST, chosen).iloc[0]
    assert row.n == n - 20 and row.judge_a == "A"
    assert compare_judges(table, FAST, chosen.iloc[:1]).empty  # one judge: nothing to compare


def test_a_strategy_that_helps_one_that_hurts_and_one_that_does_neither():
    from judgeaudit.audits.judge_comparison import compare_strategies

    rng = np.random.default_rng(5)
    n = 300
    base = rng.random((n, 2)) < 0.7
    helps, hurts = base.copy(), base.copy()
    helps[np.flatnonzero(~base.all(1))[:40]] = True  # right in both orders on 40 more pairs
    hurts[np.flatnonzero(base.any(1))[:30]] = False
    runs = {"Vanilla": base, "helps": helps, "hurts": hurts, "same": base[rng.permutation(n)]}
    table = pd.concat([_table({"J": right}, n).assign(strategy=name) for name, right in runs.items()]
                      + [_table({"K": helps}, n).assign(strategy="helps")], ignore_index=True)  # K: no base
    found = compare_strategies(table, FAST, {"synthetic": "Vanilla"}).set_index("strategy")
    assert set(found.judge) == {"J"} and set(found.index) == {"helps", "hurts", "same"}
    assert (found.base == "Vanilla").all() and (found.n == n).all()
    for name in ("helps", "hurts"):
        assert found.loc[name, "difference"] == pytest.approx(runs[name].mean() - base.mean())
        assert found.loc[name, "significant"] and found.loc[name, "p_holm"] < 1e-3
    assert found.loc["helps", "ci_low"] > 0 and (found.loc["helps", "better"], found.loc["helps", "worse"]) == (40, 0)
    assert found.loc["hurts", "ci_high"] < 0 and (found.loc["hurts", "better"], found.loc["hurts", "worse"]) == (0, 30)
    assert found.loc["same", "difference"] == 0 and not found.loc["same", "significant"]
    assert compare_strategies(table, FAST, {"elsewhere": "Vanilla"}).empty  # no source with a base
