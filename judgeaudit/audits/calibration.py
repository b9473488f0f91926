"""Does a judge know when it is right? How its confidence in each verdict ranks and matches the
verdict's correctness, computed row-wise so that one call covers every bootstrap resample
(``stats.joint_bootstrap``'s 2-D columns: rows = resamples, columns = verdicts).

- AUROC: the probability that a right verdict carries more confidence than a wrong one (ties count
  half). 0.5: the confidence says nothing of correctness; below 0.5: the judge is surer when wrong.
  It decides how much selective evaluation can keep: a threshold separates right from wrong verdicts
  only as far as the confidence ranks them.
- ECE (expected calibration error): over ``ECE_BINS`` equal-width bins of confidence, the gap between
  the share of verdicts right and their mean confidence, weighted by the bin's share of verdicts.
- Overconfidence: mean confidence minus the share right (signed; ECE has no sign).
- The reliability diagram behind ECE: per bin, the share right of the verdicts in it (``reliability``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

ECE_BINS = 10


def auroc(confidence: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Row-wise AUROC of ``confidence`` for ``correct`` (nan where a row has no right or no wrong verdict)."""
    ranks = stats.rankdata(confidence, axis=-1)
    right = np.asarray(correct, dtype=bool)
    n_right = right.sum(axis=-1)
    n_wrong = right.shape[-1] - n_right
    u = (ranks * right).sum(axis=-1) - n_right * (n_right + 1) / 2  # Mann-Whitney U of the right verdicts
    return np.where((n_right > 0) & (n_wrong > 0), u / np.maximum(n_right * n_wrong, 1), np.nan)


def bin_of(confidence: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    """The equal-width bin of [0, 1] each confidence falls in (1 in the last)."""
    # the small margin keeps a confidence such as 27/30 in the bin its exact value belongs to
    return np.clip(np.floor(np.asarray(confidence, dtype=float) * bins + 1e-9).astype(int), 0, bins - 1)


def ece(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    """Row-wise expected calibration error over ``bins`` equal-width bins of [0, 1] (1 falls in the last)."""
    confidence = np.asarray(confidence, dtype=float)
    which = bin_of(confidence, bins)
    gap = np.asarray(correct, dtype=float) - confidence
    total = sum(np.abs(np.where(which == b, gap, 0.0).sum(axis=-1)) for b in range(bins))
    return total / max(confidence.shape[-1], 1)


def overconfidence(confidence: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Row-wise mean confidence minus the share of verdicts right."""
    return (np.asarray(confidence, dtype=float) - np.asarray(correct, dtype=float)).mean(axis=-1)


def statistics() -> dict:
    """``joint_bootstrap`` statistics of the columns ``confidence`` and ``correct``."""
    return {name: (lambda c, f=f: f(c["confidence"], c["correct"]))
            for name, f in (("auroc", auroc), ("ece", ece), ("overconfidence", overconfidence))}


def reliability(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    """Row-wise share right of the verdicts in each bin (last axis: the bins; nan where a bin is empty)."""
    which = bin_of(confidence, bins)
    right = np.asarray(correct, dtype=float)
    inside = which[..., None] == np.arange(bins)
    count = inside.sum(axis=-2)
    return np.where(count > 0, (inside * right[..., None]).sum(axis=-2) / np.maximum(count, 1), np.nan)


def reliability_statistics(bins: int = ECE_BINS, prepare: Callable[[dict], dict] = lambda c: c) -> dict:
    """One ``joint_bootstrap`` statistic for the names ``bin_0`` ... ``bin_<bins - 1>``: the share right of the
    verdicts in each bin, of the columns ``confidence`` and ``correct`` (after ``prepare``), binned once."""

    def shares(c: dict) -> np.ndarray:
        flat = prepare(c)
        return reliability(flat["confidence"], flat["correct"], bins)

    return {tuple(f"bin_{b}" for b in range(bins)): shares}
