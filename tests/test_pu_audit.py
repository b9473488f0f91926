"""PU audit: the entropic partial-OT solver matches POT's, and on a planted mixture
(correct verdicts in a cone, wrong ones pointing away) the audit recovers the labels."""

from __future__ import annotations

import numpy as np
import ot
import pandas as pd
import pytest

from judgeaudit.audits.partial_ot import cosine_cost, entropic_partial_marginals, transported_mass
from judgeaudit.audits.pu_audit import PUConfig, consistency_table, denoise, run_pu_audit


@pytest.mark.parametrize("m", [0.3, 0.8])
def test_entropic_marginals_match_pot(m):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 6)), rng.normal(size=(45, 6))
    a, b = np.full(30, 1 / 30), np.full(45, 1 / 45)
    cost = cosine_cost(x, y)
    plan = ot.partial.entropic_partial_wasserstein(a, b, cost, reg=0.1, m=m, numItermax=60)
    rows, cols, it = entropic_partial_marginals(a, b, cost.copy(), m, reg=0.1, max_iter=60, tol=0)
    assert it == 60
    np.testing.assert_allclose(cols, plan.sum(0), atol=1e-12)
    np.testing.assert_allclose(rows, plan.sum(1), atol=1e-12)
    assert cols.sum() == pytest.approx(m)


def test_exact_and_entropic_agree_on_who_gets_mass():
    rng = np.random.default_rng(1)
    src = rng.normal(size=(60, 8)) + 3
    tgt = np.vstack([rng.normal(size=(50, 8)) + 3, rng.normal(size=(50, 8)) - 3])
    exact = transported_mass(src, tgt, 0.5, method="exact")
    entropic = transported_mass(src, tgt, 0.5, method="entropic", reg=0.02, max_iter=500)
    assert exact[:50].sum() == pytest.approx(0.5) and exact[50:].sum() == pytest.approx(0.0)
    assert entropic[:50].sum() > 0.95 * 0.5


def test_denoise_keeps_keep_squared():
    z = np.random.default_rng(2).normal(size=(100, 4))
    kept = denoise(z, 0.7)
    assert len(kept) == 49 and len(set(kept)) == 49


def planted(n: int = 400, correct: float = 0.7, dim: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=dim)
    u /= np.linalg.norm(u)
    truth = u + 0.35 * rng.normal(size=(n, dim))  # true improvement directions: a cone around u
    ok = rng.random(n) < correct
    z = np.where(ok[:, None], truth, -truth)  # a wrong verdict swaps winner and loser
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    human = rng.choice(["A", "B"], size=n)
    verdict = np.where(ok, human, np.where(human == "A", "B", "A"))
    frame = pd.DataFrame({"pair_id": np.arange(n), "qtype": rng.choice(["math", "code"], size=n),
                          "verdict": verdict, "human": human})
    return frame, z


def test_planted_mixture_is_recovered():
    frame, z = planted()
    results = run_pu_audit(frame, z, PUConfig(n_splits=3, seed=0))
    table = consistency_table(results, n_boot=300, confidence=0.95, seed=0).set_index("qtype")
    overall = table.loc["all"]
    assert 0.6 < overall.cons_orig < 0.8
    assert overall.cons_adj > 0.9  # wide cone: noise norm exceeds the signal
    assert overall.cons_adj_ci_low > overall.cons_orig_ci_high
    assert overall.flip_rate == pytest.approx(1 - overall.cons_orig, abs=0.06)
    assert set(table.index) == {"math", "code", "all"}


def test_audit_leaves_a_perfect_judge_alone():
    frame, z = planted(correct=1.0)
    results = run_pu_audit(frame, z, PUConfig(n_splits=2, seed=1))
    assert results["flipped"].mean() < 0.1
