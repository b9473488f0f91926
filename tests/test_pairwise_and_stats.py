"""Position-swap logic and bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.audits.stats import clustered_share, mean_ci, paired_bootstrap
from judgeaudit.judging.pairwise import combine_orders, order_score, verdict_from_margin


@pytest.mark.parametrize("ab,ba,expected", [
    ("A", "B", 1.0),    # first response wins in both orders
    ("B", "A", 0.0),    # second wins in both orders
    ("A", "A", 0.5),    # always position A: position bias, no preference
    ("B", "B", 0.5),
    ("tie", "B", 0.75),
    ("tie", "tie", 0.5),
])
def test_combine_orders(ab, ba, expected):
    assert combine_orders(ab, ba) == expected


def test_order_score_rejects_unknown():
    with pytest.raises(ValueError):
        order_score("C", "AB")
    with pytest.raises(ValueError):
        order_score("A", "XY")


def test_verdict_from_margin():
    assert verdict_from_margin(np.array([0.3, -0.3, 0.0, 1e-9]), 1e-6) == ["A", "B", "tie", "tie"]


def test_bootstrap_ci_covers_mean_and_is_reproducible():
    x = np.random.default_rng(1).normal(0.3, 1.0, 200)
    a = mean_ci(x, n_boot=1000, confidence=0.95, seed=7)
    b = mean_ci(x, n_boot=1000, confidence=0.95, seed=7)
    assert a == b
    assert a.ci_low < x.mean() < a.ci_high and a.n == 200
    assert 0.1 < a.ci_high - a.ci_low < 0.5  # about 2 * 1.96 / sqrt(200) = 0.28


def test_bootstrap_constant_sample_has_zero_width():
    est = mean_ci(np.ones(10), n_boot=200, confidence=0.95, seed=0)
    assert est.ci_low == est.ci_high == est.estimate == 1.0


def test_clustered_share_resamples_clusters_whole():
    # 20 clusters of 10 equal rows: the share's CI is about as wide as 20 rows', not 200's
    hits, clusters = np.repeat(np.arange(20) % 3 == 0, 10), np.repeat(np.arange(20), 10)
    whole = clustered_share(hits, clusters, n_boot=2000, confidence=0.95, seed=0)
    rows = mean_ci(hits, n_boot=2000, confidence=0.95, seed=0)
    assert whole.estimate == hits.mean() and whole.n == 20 and rows.n == 200
    assert whole.ci_high - whole.ci_low > 2 * (rows.ci_high - rows.ci_low)
    # the estimate is the share of rows, not the mean of the clusters' shares (0.5 here)
    uneven = clustered_share([True, False, False, False], ["a", "b", "b", "b"], n_boot=200, confidence=0.95,
                             seed=0)
    assert uneven.estimate == 0.25 and uneven.n == 2 and uneven.ci_low <= 0.25 <= uneven.ci_high


def test_paired_bootstrap_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap(lambda a, b, axis: a.mean(axis) - b.mean(axis), [np.ones(3), np.ones(4)],
                         n_boot=100, confidence=0.9, seed=0)


@pytest.mark.parametrize("ab,ba,expected", [("A", "B", "A"), ("B", "A", "B"), ("A", "A", "A"),
                                            ("B", "B", "B"), ("tie", "tie", "A"), ("tie", "A", "B")])
def test_binary_verdict(ab, ba, expected):
    from judgeaudit.judging.pairwise import binary_verdict

    assert binary_verdict(ab, ba) == expected
