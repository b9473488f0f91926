"""Bootstrap confidence intervals (scipy) for every figure an audit reports."""

from __future__ import annotations

import warnings
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
    with warnings.catch_warnings():  # scipy warns of a nan bound (as "BCa"), which is handled below
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
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


def clustered_share(hits: Sequence[bool], clusters: Sequence, *, n_boot: int, confidence: float,
                    seed: int) -> Estimate:
    """The share of true rows, with a CI from resampling the rows' clusters whole (a model's
    runs on one item, the judges' verdicts on one prompt: rows of a cluster are not
    independent). The estimate is the plain share of rows; n is the number of clusters."""
    _, cluster = np.unique(np.asarray(clusters), return_inverse=True)
    hit = np.bincount(cluster, weights=np.asarray(hits, dtype=float))
    rows = np.bincount(cluster).astype(float)
    return paired_bootstrap(lambda h, r, axis: h.sum(axis=axis) / r.sum(axis=axis), [hit, rows],
                            n_boot=n_boot, confidence=confidence, seed=seed)


@dataclass(frozen=True)
class BootstrapSettings:
    """How every CI of an audit is drawn: percentile bootstrap, ``n_boot`` resamples."""

    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 0


def joint_bootstrap(columns: dict[str, np.ndarray],
                    statistics: dict[str | tuple[str, ...], Callable[[dict[str, np.ndarray]], np.ndarray]],
                    settings: BootstrapSettings) -> dict[str, Estimate]:
    """Several statistics of the same units, each with a percentile CI from ONE set of
    resamples (units drawn with replacement, all columns together).

    Each statistic maps ``{name: 2-D array (rows = resamples, columns = units)}`` to one
    value per row, ignoring nan units where it defines so; one keyed by a tuple of names
    gives one value per name and row (array [rows, names]), for figures that share their
    work (a reliability diagram's bins). scipy's bootstrap takes one statistic at a time,
    and resampling once keeps the figures of a report card jointly consistent and fast
    (hundreds of groups x a dozen figures)."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    rng = np.random.default_rng(settings.seed)
    idx = rng.integers(0, n, size=(settings.n_boot, n)) if n else np.zeros((settings.n_boot, 0), int)
    point_cols = {k: v[None, :] for k, v in cols.items()}
    boot_cols = {k: v[idx] for k, v in cols.items()}
    alpha = (1 - settings.confidence) / 2
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for key, stat in statistics.items():
            names = key if isinstance(key, tuple) else (key,)
            points = np.asarray(stat(point_cols), dtype=float).reshape(1, len(names))[0]
            dists = np.asarray(stat(boot_cols), dtype=float).reshape(settings.n_boot, len(names))
            for name, point, dist in zip(names, points.tolist(), dists.T):
                if np.isnan(point) or np.all(np.isnan(dist)):
                    low = high = point
                else:
                    low, high = (float(np.nanquantile(dist, q)) for q in (alpha, 1 - alpha))
                    low, high = min(low, point), max(high, point)
                out[name] = Estimate(point, low, high, n, settings.confidence)
    return out
