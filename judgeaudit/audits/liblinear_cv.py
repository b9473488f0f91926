"""AlpacaEval's penalty choice for its length-controlled GLM, fit for fit: scikit-learn's
liblinear over the grid CS and the folds, seeded as ``LogisticRegressionCV`` seeds it.
Imports numpy and scikit-learn only, so that a worker process running these fits starts
in about a second."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

CS = np.logspace(-4, 4, 10)  # scikit-learn LogisticRegressionCV's default grid, as AlpacaEval uses


def continuous_log_loss(p: np.ndarray, q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each row's -w (q log p + (1 - q) log(1 - p)), p clipped to [1e-15, 1 - 1e-15]:
    scikit-learn's log-loss of a continuous target, as AlpacaEval scores its folds."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(w * (q * np.log(p) + (1 - q) * np.log(1 - p)))


def liblinear_state(seed: int, draw: int = 0) -> np.random.RandomState:
    """The random state AlpacaEval's ``LogisticRegressionCV`` hands liblinear for the
    ``draw``-th C of its grid: scikit-learn fits the grid with one ``RandomState(seed)``,
    each liblinear fit seeded by the next draw from it, and the refit at the chosen C with
    the first draw. liblinear's coordinate descent visits features in that seed's order,
    which moves the coefficients within the solver's tolerance (LC rates by up to 0.04 here
    against the exact optimum)."""
    state = np.random.RandomState(seed)
    for _ in range(draw):
        state.randint(np.iinfo("i").max)
    return state


def continuous_fit(x: np.ndarray, q: np.ndarray, w: np.ndarray, c: float, seed: int,
                   draw: int = 0) -> LogisticRegression:
    """liblinear's L1 logistic fit of the continuous target ``q`` (a row counted as a win
    weighted w q and as a loss weighted w (1 - q)), no intercept."""
    # liblinear keeps its random state in a process global: never fit from two threads at once
    model = LogisticRegression(C=c, l1_ratio=1.0, solver="liblinear", fit_intercept=False,
                               random_state=liblinear_state(seed, draw))
    model.fit(np.r_[x, x], np.r_[np.ones(len(q)), np.zeros(len(q))], sample_weight=np.r_[w * q, w * (1 - q)])
    return model


def liblinear_cv_losses(x: np.ndarray, q: np.ndarray, w: np.ndarray, folds: np.ndarray, seed: int) -> np.ndarray:
    """AlpacaEval's cross-validation scores over CS: one liblinear fit per fold and C."""
    scores = np.zeros(len(CS))
    for f in range(int(folds.max()) + 1):
        tr, te = folds != f, folds == f
        for k, c in enumerate(CS):
            model = continuous_fit(x[tr], q[tr], w[tr], c, seed, draw=k)
            scores[k] += continuous_log_loss(model.predict_proba(x[te])[:, 1], q[te], w[te]).mean()
    return scores
