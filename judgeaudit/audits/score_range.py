"""Score-range bias and its correction by contrastive decoding.

For one judge, one assistant and one score range: pick (lambda, t) on a dev split by
the Spearman correlation of the contrastive scores with the reference, then
report every scoring method on the held-out rest, with CIs. (The expected score
already shrugs off a bias that shifts every item alike, in rank terms; the arg-max
cannot, which is where the contrast earns its keep.)"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.audits.correlation import _rowwise, correlate, correlation_table
from judgeaudit.audits.stats import mean_ci
from judgeaudit.judging.pointwise import contrastive, expected, greedy

METHODS = ("greedy", "expected", "cd_greedy", "cd_expected")
ASSISTANT = "assistant_greedy"  # the assistant's own arg-max: the evidence that it shares the bias


def dev_split(n: int, dev_share: float, seed: int) -> np.ndarray:
    """Boolean mask of the dev items (at least 2, and at least 2 left to test)."""
    k = min(max(2, int(round(n * dev_share))), n - 2)
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=k, replace=False)] = True
    return mask


def grid_search(logp_main: np.ndarray, logp_assistant: np.ndarray, reference: np.ndarray, low: int,
                lambdas: Sequence[float], temperatures: Sequence[float]) -> pd.DataFrame:
    """Spearman of the contrastive greedy and expected scores for every (lambda, t), best
    first: lambda by the greedy score (the arg-max the contrast moves; t cannot), t by
    the expected score (which t sharpens or flattens)."""
    rows = []
    for lam, t in itertools.product(lambdas, temperatures):
        cd = contrastive(logp_main, logp_assistant, lam, t)
        rows.append(dict(lam=lam, t=t, spearman_greedy=correlate(greedy(cd, low), reference, "spearman"),
                         spearman_expected=correlate(expected(cd, low), reference, "spearman")))
    grid = pd.DataFrame(rows)
    # nan (a constant score) ranks last; ties go to the smaller lambda, then t nearest 1
    grid["_t1"] = (grid.t - 1.0).abs()
    grid = grid.sort_values(["spearman_greedy", "spearman_expected", "lam", "_t1"],
                            ascending=[False, False, True, True], na_position="last")
    return grid.drop(columns="_t1").reset_index(drop=True)


def method_scores(logp_main: np.ndarray, logp_assistant: np.ndarray, low: int, lam: float,
                  t: float) -> dict[str, np.ndarray]:
    """Each method's score per item, and the assistant's own greedy score."""
    cd = contrastive(logp_main, logp_assistant, lam, t)
    return {"greedy": greedy(logp_main, low).astype(float), "expected": expected(logp_main, low),
            "cd_greedy": greedy(cd, low).astype(float), "cd_expected": expected(cd, low),
            ASSISTANT: greedy(logp_assistant, low).astype(float)}


def range_study(logp_main: np.ndarray, logp_assistant: np.ndarray, reference: np.ndarray, low: int, *,
                lambdas: Sequence[float], temperatures: Sequence[float], dev_share: float,
                n_boot: int, confidence: float, seed: int) -> tuple[pd.DataFrame, dict, np.ndarray, pd.DataFrame]:
    """(correlation table on the test split, chosen {lam, t, dev_spearman, n_dev}, dev mask,
    the whole (lambda, t) grid on the dev split, best first)."""
    reference = np.asarray(reference, dtype=float)
    dev = dev_split(len(reference), dev_share, seed)
    grid = grid_search(logp_main[dev], logp_assistant[dev], reference[dev], low, lambdas, temperatures)
    best = grid.iloc[0]
    scores = method_scores(logp_main[~dev], logp_assistant[~dev], low, float(best.lam), float(best.t))
    table = correlation_table(reference[~dev], scores, "greedy", n_boot=n_boot, confidence=confidence,
                              seed=seed)
    chosen = {"lam": float(best.lam), "t": float(best.t), "dev_spearman_greedy": float(best.spearman_greedy),
              "dev_spearman_expected": float(best.spearman_expected),
              "n_dev": int(dev.sum())}
    return table, chosen, dev, grid


def favoured_score(main: np.ndarray, assistant: np.ndarray, reference: np.ndarray, dev: np.ndarray,
                   low: int, high: int, *, n_boot: int, confidence: float, seed: int) -> dict:
    """Does the assistant share the main judge's bias? The score the main judge over-gives
    most on the dev split (its count minus the rounded reference's), then on the test
    split how often the main judge, the assistant and the reference give it, and the
    assistant's excess over the reference (paired), each with a bootstrap CI."""
    ref = np.rint(reference)
    grid = np.arange(low, high + 1)
    excess = [(main[dev] == s).sum() - (ref[dev] == s).sum() for s in grid]
    fav = int(grid[int(np.argmax(excess))])
    test = ~dev
    hits = {"main_share": main[test] == fav, "assistant_share": assistant[test] == fav,
            "reference_share": ref[test] == fav}
    out: dict = {"favoured": fav, "n": int(test.sum())}
    excess = hits["assistant_share"].astype(float) - hits["reference_share"]
    for name, x in [*hits.items(), ("assistant_excess", excess)]:
        est = mean_ci(np.asarray(x, dtype=float), n_boot=n_boot, confidence=confidence, seed=seed)
        out.update({name: est.estimate, f"{name}_ci_low": est.ci_low, f"{name}_ci_high": est.ci_high})
    return out


def _interval(point: float, dist: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    if np.isnan(dist).all():
        return float("nan"), float("nan")
    low, high = (float(np.nanquantile(dist, q)) for q in (alpha, 1 - alpha))
    return (min(low, point), max(high, point)) if np.isfinite(point) else (low, high)


def range_effects(reference: list[np.ndarray], scores: dict[str, list[np.ndarray]], favoured: list[int], *,
                  n_boot: int, confidence: float, seed: int) -> dict:
    """The effects over every range at once, each resampling the test answers jointly
    across the ranges (the same answers are scored under each), with percentile CIs:

    - ``cd_gain_<d>``: the range-averaged relative gain of contrastive decoding's Spearman
      over the main judge's, mean_r (rho_cd,r - rho_main,r) / |rho_main,r|, for decoding d
      (greedy: cd_greedy over greedy; expected: cd_expected over expected), and
      ``cd_delta_<d>`` its absolute form, mean_r (rho_cd,r - rho_main,r);
    - ``spread_greedy``: max_r - min_r of the main judge's greedy Spearman (range sensitivity);
    - ``main_excess`` / ``assistant_excess``: mean_r of the share of answers given range r's
      favoured score by the main judge / its assistant alone, minus the reference's share.

    ``reference[r]``, ``scores[method][r]``: range r's test answers; ``favoured[r]``: the
    score the main judge over-gives in range r (chosen on the dev split)."""
    n = len(reference[0])
    boots = np.random.default_rng(seed).integers(0, n, (n_boot, n))
    rho, rho_boot = {}, {}
    for method in ("greedy", "expected", "cd_greedy", "cd_expected"):
        rho[method] = np.array([correlate(s, ref, "spearman") for s, ref in zip(scores[method], reference)])
        rho_boot[method] = np.stack([_rowwise(s[boots], ref[boots], "spearman")
                                     for s, ref in zip(scores[method], reference)])  # [R, B]
    stats_: dict[str, tuple[float, np.ndarray]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for d in ("greedy", "expected"):
            point, boot = rho[f"cd_{d}"] - rho[d], rho_boot[f"cd_{d}"] - rho_boot[d]
            stats_[f"cd_gain_{d}"] = (float(np.mean(point / np.abs(rho[d]))),
                                      np.mean(boot / np.abs(rho_boot[d]), axis=0))
            stats_[f"cd_delta_{d}"] = (float(np.mean(point)), np.mean(boot, axis=0))
    stats_["spread_greedy"] = (float(np.ptp(rho["greedy"])), np.ptp(rho_boot["greedy"], axis=0))
    ref_hits = [np.rint(ref) == fav for ref, fav in zip(reference, favoured)]
    for who, method in (("main", "greedy"), ("assistant", ASSISTANT)):
        excess = np.stack([(s == fav).astype(float) - hit
                           for s, fav, hit in zip(scores[method], favoured, ref_hits)])  # [R, n]
        stats_[f"{who}_excess"] = (float(excess.mean()), excess[:, boots].mean(axis=(0, 2)))
    out: dict = {"n": n, "n_ranges": len(reference)}
    for name, (point, dist) in stats_.items():
        dist = np.where(np.isfinite(dist), dist, np.nan)
        low, high = _interval(point, dist, confidence)
        out |= {name: point if np.isfinite(point) else float("nan"), f"{name}_ci_low": low, f"{name}_ci_high": high}
    out["shared"] = bool(out["assistant_excess_ci_low"] > 0)  # the assistant over-gives the favourite too
    return out
