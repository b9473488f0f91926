"""Bootstrap confidence intervals (scipy) for every figure an audit reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Estimate:
    """A figure with its n and a bootstrap confidence interval."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    confidence: float

    def as_dict(self) -> dict:
        return asdict(self)


def paired_bootstrap(statistic: Callable[..., np.ndarray], samples: Sequence[np.ndarray], *,
                     n_boot: int, confidence: float, seed: int) -> Estimate:
    """Percentile bootstrap of ``statistic(*samples, axis=-1)``, resampling the units
    (e.g. prompts) that all ``samples`` share, jointly."""
    samples = [np.asarray(s, dtype=float) for s in samples]
    n = len(samples[0])
    if any(len(s) != n for s in samples):
        raise ValueError("paired samples must have the same length")
    point = float(statistic(*samples, axis=-1))
    if n < 2 or np.all([np.ptp(s) == 0 for s in samples]):
        return Estimate(point, point, point, n, confidence)  # no variation to resample
    res = stats.bootstrap(samples, statistic, paired=True, vectorized=True, n_resamples=n_boot,
                          confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(seed))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.isnan(low) or np.isnan(high):  # a resample hit an undefined ratio: use nan-aware percentiles
        dist = res.bootstrap_distribution
        alpha = (1 - confidence) / 2
        low, high = (float(np.nanquantile(dist, q)) for q in (alpha, 1 - alpha))
    return Estimate(point, min(low, point), max(high, point), n, confidence)


def mean_ci(values: Sequence[float], *, n_boot: int, confidence: float, seed: int) -> Estimate:
    """Mean with a bootstrap CI."""
    return paired_bootstrap(lambda x, axis: np.mean(x, axis=axis), [np.asarray(values)],
                            n_boot=n_boot, confidence=confidence, seed=seed)
