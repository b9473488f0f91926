"""Which judge is more accurate on the same pairs: paired comparisons of judges.

Two judges' accuracy CIs that overlap do not show the judges equal, and CIs drawn apart
ignore that both judged the same pairs, so a hard pair costs both. Per source, every two
of the chosen (judge, strategy) rows (in the stage: each judge's headline strategy) are
compared on the labelled items both judged, pooled over subsets:

- per item, a judge's score is its accuracy over the orders it saw (0, 1/2 or 1), so the
  mean is the report card's ``accuracy``; an unparseable verdict counts as wrong;
- ``difference``: A's mean score minus B's, with a paired bootstrap CI (items resampled
  jointly);
- ``a_better`` / ``b_better``: the items where one judge scores higher;
- ``p_value``: the exact two-sided paired permutation test of the difference (every sign of
  the per-item differences equally likely under "the judges are equally accurate"; where each
  judge saw one order, this is McNemar's exact test). A sign test would count an item one
  judge got right in one order only as a whole point, and miss differences the CI shows;
- ``p_holm``: Holm's step-down adjustment over the source's comparisons, so that a table of
  many judge pairs keeps its family-wise error rate at ``1 - confidence``.

A is the more accurate of the two, so ``difference`` >= 0. Where the chosen strategy is each
judge's best of several, the comparison inherits that selection (as the headline does).

``compare_strategies`` asks the other question a benchmark with many prompting strategies
raises (LLMBar's 15): does a strategy help a judge? Each strategy of a judge against the
source's base strategy (``BASE_STRATEGY``: LLMBar's Vanilla), same figures, signed
(strategy minus base), Holm-adjusted over the judge's strategies.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from judgeaudit.audits.judge_quality import MISSING, item_frame
from judgeaudit.audits.stats import BootstrapSettings, paired_bootstrap

COLUMNS = ["source", "judge_a", "strategy_a", "judge_b", "strategy_b", "n", "accuracy_a", "accuracy_b",
           "difference", "ci_low", "ci_high", "a_better", "b_better", "p_value", "p_holm", "significant",
           "confidence"]
STRATEGY_COLUMNS = ["source", "judge", "strategy", "base", "n", "accuracy", "accuracy_base", "difference", "ci_low",
                    "ci_high", "better", "worse", "p_value", "p_holm", "significant", "confidence"]
BASE_STRATEGY = {"llmbar": "Vanilla"}  # per source: the strategy the others are measured against


def item_scores(table: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled (source, item, judge, strategy): the judge's accuracy on the item,
    averaged over the presentation orders it saw."""
    items = item_frame(table)
    items = items[items["label"] != MISSING]
    right = np.stack([(items["v1"] == items["label"]).to_numpy(float),
                      np.where(items["v2"] == MISSING, np.nan, (items["v2"] == items["label"]).to_numpy(float))])
    return items[["source", "subset", "item_id", "judge", "strategy"]].assign(score=np.nanmean(right, axis=0))


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]).clip(max=1.0)
    out = np.empty_like(p)
    out[order] = adjusted
    return out


def sign_flip_p(differences: np.ndarray) -> float:
    """Exact two-sided p-value of the paired permutation test of ``sum(differences)``, for
    per-item differences in half points (-1, -1/2, 0, 1/2, 1): under the null each item's sign
    is a fair coin, so the sum (in half points) is (2K1 - h) + 2 (2K2 - o), K1 ~ Bin(h, 1/2)
    over the h half-point items and K2 ~ Bin(o, 1/2) over the o whole-point ones. Exact and
    deterministic, where scipy's permutation_test samples 2^n sign patterns at random."""
    units = np.rint(2 * np.asarray(differences, dtype=float)).astype(int)
    if not np.allclose(units, 2 * np.asarray(differences)) or np.abs(units).max(initial=0) > 2:
        raise ValueError("per-item differences must be multiples of 1/2 in [-1, 1]")
    h, o = int((np.abs(units) == 1).sum()), int((np.abs(units) == 2).sum())
    k1, k2 = np.arange(h + 1), np.arange(o + 1)
    sums = (2 * k1 - h)[:, None] + 2 * (2 * k2 - o)[None, :]
    probs = stats.binom.pmf(k1, h, 0.5)[:, None] * stats.binom.pmf(k2, o, 0.5)[None, :]
    return float(min(1.0, probs[np.abs(sums) >= abs(int(units.sum()))].sum()))


def _compare(a: pd.Series, b: pd.Series, settings: BootstrapSettings) -> dict:
    """Two score columns on their shared items: ``a`` minus ``b``."""
    x, y = a.to_numpy(), b.to_numpy()
    est = paired_bootstrap(lambda u, v, axis: u.mean(axis) - v.mean(axis), [x, y], n_boot=settings.n_boot,
                           confidence=settings.confidence, seed=settings.seed)
    a_better, b_better = int((x > y).sum()), int((y > x).sum())
    p = sign_flip_p(x - y)
    return {"n": len(x), "accuracy_a": float(x.mean()), "accuracy_b": float(y.mean()), "difference": est.estimate,
            "ci_low": est.ci_low, "ci_high": est.ci_high, "a_better": a_better, "b_better": b_better,
            "p_value": float(p)}


def compare_judges(table: pd.DataFrame, settings: BootstrapSettings,
                   chosen: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every two judges of a source compared on the labelled items both judged (``COLUMNS``).
    ``chosen``: the (source, judge, strategy) rows to compare; default every one in ``table``."""
    scores = item_scores(table)
    if chosen is not None:
        scores = scores.merge(chosen[["source", "judge", "strategy"]].drop_duplicates())
    rows = []
    for source, grp in scores.groupby("source", sort=True):
        wide = grp.pivot_table(index=["subset", "item_id"], columns=["judge", "strategy"], values="score")
        means = wide.mean().sort_values(ascending=False, kind="stable")  # A: the more accurate
        found = [r for a, b in combinations(means.index, 2) if (r := compare_pair(wide, a, b, source, settings))]
        rows += adjusted(found, settings)
    return pd.DataFrame(rows, columns=COLUMNS)


def compare_pair(wide: pd.DataFrame, a: tuple[str, str], b: tuple[str, str], source: str,
                 settings: BootstrapSettings) -> dict | None:
    """One ``COLUMNS`` row (without Holm's) for the (judge, strategy) columns ``a`` and ``b`` of a
    source's item x judge score table, on the items both scored, A the more accurate there;
    None where they share fewer than two items."""
    both = wide[[a, b]].dropna()
    if len(both) < 2:
        return None
    if both[b].mean() > both[a].mean():
        a, b = b, a
    return {"source": source, "judge_a": a[0], "strategy_a": a[1], "judge_b": b[0], "strategy_b": b[1],
            **_compare(both[a], both[b], settings)}


def adjusted(found: list[dict], settings: BootstrapSettings) -> list[dict]:
    """One family's comparisons with Holm's p-values and the verdict at ``1 - confidence``."""
    for r, p in zip(found, holm(np.array([r["p_value"] for r in found]))):
        r |= {"p_holm": float(p), "significant": bool(p < 1 - settings.confidence), "confidence": settings.confidence}
    return found


def compare_strategies(table: pd.DataFrame, settings: BootstrapSettings,
                       base: dict[str, str] | None = None) -> pd.DataFrame:
    """Each judge's strategies against its base strategy on the labelled items both cover
    (``STRATEGY_COLUMNS``; ``difference``: strategy minus base); ``base`` per source, default
    ``BASE_STRATEGY``. A judge without the base strategy is left out."""
    base = BASE_STRATEGY if base is None else base
    scores = item_scores(table[table["source"].isin(base)])
    rows = []
    for (source, judge), grp in scores.groupby(["source", "judge"], sort=True):
        wide = grp.pivot_table(index=["subset", "item_id"], columns="strategy", values="score")
        if base[source] not in wide:
            continue
        found = []
        for strategy in (s for s in wide.columns if s != base[source]):
            both = wide[[strategy, base[source]]].dropna()
            if len(both) < 2:
                continue
            r = _compare(both[strategy], both[base[source]], settings)
            found.append({"source": source, "judge": judge, "strategy": strategy, "base": base[source], "n": r["n"],
                          "accuracy": r["accuracy_a"], "accuracy_base": r["accuracy_b"],
                          "difference": r["difference"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                          "better": r["a_better"], "worse": r["b_better"], "p_value": r["p_value"]})
        rows += adjusted(found, settings)
    return pd.DataFrame(rows, columns=STRATEGY_COLUMNS)
