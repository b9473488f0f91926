"""The robustness stage's length-/style-controlled GLM with its bootstrap: one
scikit-learn LogisticRegression (lbfgs, its default tolerance) per resample, as before,
against every resample solved at once by batched Newton (audits/l2_logistic.py), in one
run on the same judge's comparisons. Prints the time ratio and how far each is from the
objective's optimum (scikit-learn run to tol 1e-12 stands for it).

    python bench/length_glm.py [--data data] [--judge gen-formal] [--boot 200]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from judgeaudit.audits.leakage import CELL, pair_scores
from judgeaudit.audits.length_control import C, CONTROLS, _design, _fit, with_differences
from judgeaudit.config import load_params
from judgeaudit.judging.student_pairs import comparisons
from judgeaudit.layout import Layout


def _sklearn(x: np.ndarray, y: np.ndarray, **kw) -> np.ndarray:
    glm = LogisticRegression(C=C, fit_intercept=False, **kw)
    glm.fit(np.vstack([x, x]), np.r_[np.ones(len(y)), np.zeros(len(y))], sample_weight=np.r_[y, 1 - y] + 1e-9)
    return glm.coef_[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="data")
    ap.add_argument("--judge", default="gen-formal")
    ap.add_argument("--boot", type=int, default=200)
    args = ap.parse_args()
    layout = Layout(Path(args.data))
    params = load_params()
    responses = pd.read_parquet(layout.responses)
    pairs = comparisons(responses, params.leakage.generators)
    scores = with_differences(pair_scores(pd.read_parquet(layout.judgments)), pairs, CELL)
    g = scores[scores.judge == args.judge]
    g = g.assign(cell=list(zip(*(g[c] for c in CELL))))
    cells, y = sorted(set(g["cell"])), g["score"].to_numpy()
    prompts = np.array(sorted(set(g["prompt_id"])))
    rng = np.random.default_rng(0)
    counts = np.stack([np.bincount(np.searchsorted(prompts, rng.choice(prompts, size=len(prompts))),
                                   minlength=len(prompts)) for _ in range(args.boot)]).astype(float)
    weights = np.vstack([np.ones(len(g)), counts[:, np.searchsorted(prompts, g["prompt_id"].to_numpy())]])
    rows = [np.repeat(np.arange(len(g)), w.astype(int)) for w in weights]
    print(f"judge={args.judge} comparisons={len(g)} cells={len(cells)} resamples={args.boot}")
    print(f"{'controls':<14}{'sklearn s':>11}{'batched s':>11}{'ratio':>8}"
          f"{'|b - opt| sklearn':>19}{'|b - opt| batched':>19}")
    for name, controls in CONTROLS.items():
        start = time.perf_counter()
        old = np.array([_sklearn(_design(g.iloc[r], cells, controls, np.ones((1, len(r))))[0], y[r], max_iter=500)
                        for r in rows])
        t_old = time.perf_counter() - start
        start = time.perf_counter()
        new = _fit(g, cells, controls, weights)
        t_new = time.perf_counter() - start
        # the optimum, for the point estimate and the first 10 resamples
        opt = np.array([_sklearn(_design(g.iloc[r], cells, controls, np.ones((1, len(r))))[0], y[r], tol=1e-12,
                                 max_iter=100_000) for r in rows[:11]])
        print(f"{name:<14}{t_old:>11.2f}{t_new:>11.2f}{t_old / t_new:>7.1f}x"
              f"{np.abs(old[:11] - opt).max():>19.2e}{np.abs(new[:11] - opt).max():>19.2e}")


if __name__ == "__main__":
    main()
