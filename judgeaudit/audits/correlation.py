"""Agreement of judge scores with reference scores: Spearman, Pearson and Kendall,
each with a bootstrap CI, and the relative improvement of one scoring method over
another, resampled jointly (the same items in every method's resample)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

KINDS = ("spearman", "pearson", "kendall")


def correlate(x: np.ndarray, y: np.ndarray, kind: str) -> float:
    """One correlation; nan where either side is constant (undefined)."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    if kind == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    if kind == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if kind == "kendall":
        return float(stats.kendalltau(x, y).statistic)
    raise ValueError(f"unknown correlation {kind!r}; known: {list(KINDS)}")


def _rowwise(xb: np.ndarray, yb: np.ndarray, kind: str) -> np.ndarray:
    """The correlation of each row pair of [B, n] arrays (the bootstrap resamples)."""
    if kind == "kendall":  # O(n log n) per row in scipy; no vectorised form that is faster
        return np.array([correlate(x, y, kind) for x, y in zip(xb, yb)])
    if kind == "spearman":
        xb, yb = stats.rankdata(xb, axis=1), stats.rankdata(yb, axis=1)
    elif kind != "pearson":
        raise ValueError(f"unknown correlation {kind!r}; known: {list(KINDS)}")
    xc, yc = xb - xb.mean(axis=1, keepdims=True), yb - yb.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc ** 2).sum(axis=1) * (yc ** 2).sum(axis=1))
    return np.where(np.isfinite(r), np.clip(r, -1, 1), np.nan)


def _interval(dist: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    dist = dist[np.isfinite(dist)]
    if not len(dist):
        return float("nan"), float("nan")
    return float(np.quantile(dist, alpha)), float(np.quantile(dist, 1 - alpha))


def correlation_table(reference: np.ndarray, scores: dict[str, np.ndarray], baseline: str, *,
                      n_boot: int, confidence: float, seed: int,
                      kinds: tuple[str, ...] = KINDS) -> pd.DataFrame:
    """Rows (method, kind, estimate, ci_low, ci_high, n, confidence, improvement, imp_ci_low,
    imp_ci_high, rel_improvement, rel_ci_low, rel_ci_high): each method's correlation with
    ``reference``, its improvement over ``baseline`` (r - r_base) and the relative one
    ((r - r_base) / |r_base|, unstable where r_base is near 0), with percentile bootstrap
    CIs over items."""
    y = np.asarray(reference, dtype=float)
    n = len(y)
    rng = np.random.default_rng(seed)
    boots = rng.integers(0, n, size=(n_boot, n))
    rows = []
    for kind in kinds:
        point = {m: correlate(np.asarray(s, float), y, kind) for m, s in scores.items()}
        dist = {m: _rowwise(np.asarray(s, float)[boots], y[boots], kind) for m, s in scores.items()}
        base = dist[baseline]
        for m in scores:
            low, high = _interval(dist[m], confidence)
            imp_low, imp_high = _interval(dist[m] - base, confidence)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = (point[m] - point[baseline]) / abs(point[baseline])
                rel_low, rel_high = _interval((dist[m] - base) / np.abs(base), confidence)
            rows.append(dict(method=m, kind=kind, estimate=point[m], ci_low=low, ci_high=high, n=n,
                             confidence=confidence, improvement=point[m] - point[baseline], imp_ci_low=imp_low,
                             imp_ci_high=imp_high, rel_improvement=rel, rel_ci_low=rel_low,
                             rel_ci_high=rel_high))
    return pd.DataFrame(rows)
