"""Prefix bias in reward models: auto-influence and cross-influence of identity prefixes.

A pair scorer returns d(q, a1, a2) > 0 when the model prefers a1; it scores both
presentation orders, so position cancels. Auto-influence: w(p1, p2) = share of unique
(q, a) where p1 + a beats p2 + a, omega = w - 0.5 (antisymmetric). Cross-influence:
alpha(p1, p2) = acc(p1 on chosen, p2 on rejected) - acc(no prefix on either).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from judgeaudit.attacks.transforms import add_prefix
from judgeaudit.audits.stats import mean_ci, paired_bootstrap

PairScorer = Callable[[Sequence[str], Sequence[str], Sequence[str]], np.ndarray]


def _win(d: np.ndarray) -> np.ndarray:
    return np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))


def auto_influence(score: PairScorer, questions: Sequence[str], answers: Sequence[str],
                   prefixes: Sequence[str], *, n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """omega(p1, p2) for every ordered prefix pair, with n and a bootstrap CI."""
    rows = []
    for i, p1 in enumerate(prefixes):
        for j, p2 in enumerate(prefixes):
            if i == j:
                rows.append(dict(p1=p1, p2=p2, estimate=0.0, ci_low=0.0, ci_high=0.0, n=len(answers)))
                continue
            wins = _win(score(questions, [add_prefix(a, p1) for a in answers],
                              [add_prefix(a, p2) for a in answers]))
            est = mean_ci(wins - 0.5, n_boot=n_boot, confidence=confidence, seed=seed)
            rows.append(dict(p1=p1, p2=p2, **{k: est.as_dict()[k] for k in ("estimate", "ci_low", "ci_high", "n")}))
    return pd.DataFrame(rows).assign(kind="omega")


def cross_influence(score: PairScorer, questions: Sequence[str], chosen: Sequence[str],
                    rejected: Sequence[str], prefixes: Sequence[str], *, n_boot: int, confidence: float,
                    seed: int) -> tuple[pd.DataFrame, float]:
    """(alpha(p1, p2) table with paired-bootstrap CIs, accuracy with no prefixes)."""
    base = _win(score(questions, chosen, rejected))
    rows = []
    for p1 in prefixes:
        for p2 in prefixes:
            acc = _win(score(questions, [add_prefix(c, p1) for c in chosen],
                             [add_prefix(r, p2) for r in rejected]))
            est = paired_bootstrap(lambda x, y, axis: x.mean(axis) - y.mean(axis), [acc, base],
                                   n_boot=n_boot, confidence=confidence, seed=seed)
            rows.append(dict(p1=p1, p2=p2, estimate=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high,
                             n=est.n))
    return pd.DataFrame(rows).assign(kind="alpha"), float(base.mean())


def fingerprint_agreement(base: PairScorer, trained: PairScorer, questions: Sequence[str],
                          answers: Sequence[str], prefixes: Sequence[str], *, n_boot: int,
                          confidence: float, seed: int) -> dict:
    """How much of a trained RM's prefix preference its base LM already shows zero-shot:
    per (q, a), the share of distinct prefix pairs on which both prefer the same prefix
    (ties agree with ties); mean over answers with a bootstrap CI (n = answers). 0.5 is
    chance for two unrelated scorers with no ties; 1.0, the RM keeps its base's ranking of
    every prefix pair."""
    agree = []
    for i, p1 in enumerate(prefixes):
        for p2 in prefixes[i + 1:]:
            first, second = [add_prefix(a, p1) for a in answers], [add_prefix(a, p2) for a in answers]
            agree.append(_win(base(questions, first, second)) == _win(trained(questions, first, second)))
    est = mean_ci(np.mean(agree, axis=0), n_boot=n_boot, confidence=confidence, seed=seed)
    return {"fingerprint": est.estimate, "fingerprint_ci_low": est.ci_low, "fingerprint_ci_high": est.ci_high,
            "fingerprint_n": est.n}


def mean_abs_offdiagonal(matrix: pd.DataFrame) -> float:
    """omega-bar / alpha-bar: mean |value| over pairs of distinct prefixes."""
    off = matrix[matrix.p1 != matrix.p2]
    return float(off["estimate"].abs().mean()) if len(off) else 0.0


def bar_cis(score: PairScorer, questions: Sequence[str], chosen: Sequence[str], rejected: Sequence[str],
            prefixes: Sequence[str], *, n_boot: int, confidence: float, seed: int) -> dict:
    """omega-bar and alpha-bar with bootstrap CIs: the answers (omega: every unique (q, a);
    alpha: the pairs) resampled, the same resample for every prefix pair, the mean |value|
    over pairs of distinct prefixes recomputed on each."""
    q2, answers = list(questions) * 2, list(chosen) + list(rejected)
    wins = [_win(score(q2, [add_prefix(a, p1) for a in answers], [add_prefix(a, p2) for a in answers]))
            for i, p1 in enumerate(prefixes) for j, p2 in enumerate(prefixes) if i != j]
    base = _win(score(questions, chosen, rejected))
    accs = [_win(score(questions, [add_prefix(c, p1) for c in chosen], [add_prefix(r, p2) for r in rejected]))
            for i, p1 in enumerate(prefixes) for j, p2 in enumerate(prefixes) if i != j]
    omega = paired_bootstrap(lambda *w, axis: np.mean([np.abs(x.mean(axis) - 0.5) for x in w], axis=0), wins,
                             n_boot=n_boot, confidence=confidence, seed=seed)
    alpha = paired_bootstrap(lambda b, *a, axis: np.mean([np.abs(x.mean(axis) - b.mean(axis)) for x in a], axis=0),
                             [base, *accs], n_boot=n_boot, confidence=confidence, seed=seed)
    return {"omega_bar_ci_low": omega.ci_low, "omega_bar_ci_high": omega.ci_high, "omega_n": omega.n,
            "alpha_bar_ci_low": alpha.ci_low, "alpha_bar_ci_high": alpha.ci_high, "alpha_n": alpha.n}
