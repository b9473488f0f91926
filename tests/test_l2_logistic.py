"""The batched L2 logistic GLM against scikit-learn's LogisticRegression run to a tight
tolerance, and a bootstrap resample as weights against the same resample as rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from judgeaudit.audits.l2_logistic import fit_l2_logistic
from judgeaudit.audits.length_control import C, CONTROLS, _design, _fit


def _sklearn(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> np.ndarray:
    """scikit-learn's fit of the fractional outcome ``y`` (rows weighted ``w``), as two weighted rows."""
    glm = LogisticRegression(C=c, fit_intercept=False, tol=1e-12, max_iter=100_000)
    glm.fit(np.vstack([x, x]), np.r_[np.ones(len(y)), np.zeros(len(y))],
            sample_weight=np.r_[w * (y + 1e-9), w * (1 - y + 1e-9)])
    return glm.coef_[0]


def _problem(seed: int, n: int = 120, p: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    y = rng.binomial(2, 1 / (1 + np.exp(-x @ rng.normal(size=p)))) / 2
    return x, y


@pytest.mark.parametrize("c", [0.01, 1.0, 100.0])
def test_equals_scikit_learn_at_a_tight_tolerance(c):
    problems = [_problem(seed) for seed in range(6)]
    x = np.stack([p[0] for p in problems])
    y = np.stack([p[1] for p in problems])
    w = np.random.default_rng(9).integers(0, 3, size=y.shape).astype(float)
    got = fit_l2_logistic(x, w * (y + 1e-9), w * (1 - y + 1e-9), c)
    for k in range(len(problems)):
        np.testing.assert_allclose(got[k], _sklearn(x[k], y[k], w[k], c), atol=2e-6, rtol=1e-5)


def test_the_gradient_vanishes_even_where_a_cell_is_one_sided():
    x = np.zeros((40, 3))
    x[:20, 0], x[20:, 1], x[:, 2] = 1.0, 1.0, np.linspace(-1, 1, 40)
    y = np.r_[np.ones(20), np.full(20, 0.5)]  # the first cell always wins: only the penalty keeps it finite
    pos, neg = y + 1e-9, 1 - y + 1e-9
    b = fit_l2_logistic(x, pos[None], neg[None], C)[0]
    s = 1 / (1 + np.exp(-x @ b))
    grad = C * x.T @ ((pos + neg) * s - pos) + b
    assert np.abs(grad).max() < 1e-6 and 5 < b[0] < 50


def test_a_resample_as_weights_is_the_resample_as_rows():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"cell": [("a",), ("b",)] * 30, "prompt_id": np.repeat(np.arange(30), 2),
                          "score": rng.integers(0, 3, 60) / 2, **{f"d_{k}": rng.normal(size=60) * 10
                                                                  for k in CONTROLS["length+style"]}})
    cells = [("a",), ("b",)]
    drawn = rng.integers(0, 30, 30)
    weights = np.bincount(drawn, minlength=30)[frame["prompt_id"]].astype(float)
    rows = frame.iloc[np.concatenate([np.flatnonzero(frame.prompt_id == p) for p in drawn])]
    for controls in CONTROLS.values():
        got = _fit(frame, cells, controls, weights[None])[0]
        x = _design(rows, cells, controls, np.ones((1, len(rows))))[0]
        np.testing.assert_allclose(got, _sklearn(x, rows["score"].to_numpy(), np.ones(len(rows)), C),
                                   atol=2e-6, rtol=1e-5)


def test_finished_problems_leave_the_batch_and_each_keeps_its_own_solution(monkeypatch):
    """A problem that needs many more Newton steps (a one-sided cell at a weak penalty) does
    not keep the finished ones in the batch (each later objective evaluation is over it
    alone), and every problem's solution is the one it gets solved alone."""
    import judgeaudit.audits.l2_logistic as l2

    x = np.zeros((4, 40, 3))
    x[:, :20, 0], x[:, 20:, 1], x[:, :, 2] = 1.0, 1.0, np.linspace(-1, 1, 40)
    y = np.tile(np.r_[np.full(20, 0.75), np.full(20, 0.5)], (4, 1))
    y[3, :20] = 1.0  # the first cell always wins: far from the start, many more steps
    pos, neg = y + 1e-9, 1 - y + 1e-9
    sizes = []
    objective = l2._objective
    monkeypatch.setattr(l2, "_objective", lambda xx, *a: sizes.append(len(xx)) or objective(xx, *a))
    together = fit_l2_logistic(x, pos, neg, 1e4)
    assert sizes[0] == 4 and sizes[-1] == 1 and sizes.count(1) >= 3, sizes
    for k in range(4):
        alone = fit_l2_logistic(x[k], pos[k][None], neg[k][None], 1e4)[0]
        np.testing.assert_allclose(together[k], alone, rtol=1e-9, atol=1e-9)
