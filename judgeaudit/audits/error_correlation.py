"""Which judges err together? Per source, every two of the chosen (judge, strategy) rows (in the
stage: each judge's headline strategy), on the labelled pairs both judged, in each order both saw:

- a unit is a (pair, order); a judge errs on it where its verdict is not the label (an
  unparseable verdict errs, as in the report card);
- ``error_a`` / ``error_b``: each judge's error rate; ``both_wrong``: the share of units both
  got wrong, beside ``expected_both`` = error_a x error_b, its value were the errors independent;
- ``correlation``: the phi coefficient (Pearson's r of the two error indicators), with a
  bootstrap CI that resamples pairs (a pair's two orders move together).

Judges whose errors correlate fall for the same pairs, so a jury of them votes the same way
(``juries``), and a second judge of the kind checks the first one little. Shared difficulty
counts too: a pair every judge finds hard raises every correlation, which is what a user who
combines judges needs to know.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from judgeaudit.audits.judge_quality import MISSING, item_frame
from judgeaudit.audits.stats import BootstrapSettings, paired_bootstrap

COLUMNS = ["source", "judge_a", "strategy_a", "judge_b", "strategy_b", "n", "units", "error_a", "error_b",
           "both_wrong", "expected_both", "correlation", "ci_low", "ci_high", "confidence"]


def _phi(a1: np.ndarray, a2: np.ndarray, b1: np.ndarray, b2: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson's r of the error indicators a and b over both orders' units (nan: an order not
    judged); nan where either judge never (or always) errs."""
    a, b = np.concatenate([a1, a2], axis=axis), np.concatenate([b1, b2], axis=axis)
    ma, mb = np.nanmean(a, axis=axis, keepdims=True), np.nanmean(b, axis=axis, keepdims=True)
    cov = np.nanmean((a - ma) * (b - mb), axis=axis)
    spread = np.sqrt(np.nanmean((a - ma) ** 2, axis=axis) * np.nanmean((b - mb) ** 2, axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, cov / np.where(spread > 0, spread, 1), np.nan)


def _errors(items: pd.DataFrame, order: str) -> pd.DataFrame:
    """Per labelled item (rows) and (judge, strategy) (columns): 1 where the verdict shown in
    ``order`` is wrong, 0 where right, nan where not judged."""
    verdict = items.pivot_table(index=["subset", "item_id"], columns=["judge", "strategy"], values=order)
    label = items.drop_duplicates(["subset", "item_id"]).set_index(["subset", "item_id"])["label"]
    wrong = verdict.ne(label.reindex(verdict.index), axis=0).astype(float)
    return wrong.where(verdict.notna() & (verdict != MISSING))


def error_correlation(table: pd.DataFrame, settings: BootstrapSettings,
                      chosen: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every two judges of a source: how their errors on the same pairs go together (``COLUMNS``).
    ``chosen``: the (source, judge, strategy) rows to pair; default every one in ``table``."""
    if chosen is not None:
        table = table.merge(chosen[["source", "judge", "strategy"]].drop_duplicates())
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    items = item_frame(table)
    items = items[items["label"] != MISSING]
    rows = []
    for source, grp in items.groupby("source", sort=True):
        first, second = _errors(grp, "v1"), _errors(grp, "v2")
        second = second.reindex(index=first.index, columns=first.columns)
        for a, b in combinations(first.columns, 2):
            both = first[[a, b]].notna().all(axis=1)
            a1, b1 = first.loc[both, a].to_numpy(), first.loc[both, b].to_numpy()
            a2, b2 = second.loc[both, a].to_numpy(), second.loc[both, b].to_numpy()
            missing = np.isnan(a2) | np.isnan(b2)  # an order one of them did not see
            a2, b2 = np.where(missing, np.nan, a2), np.where(missing, np.nan, b2)
            if both.sum() < 2 or np.isnan(_phi(a1, a2, b1, b2)):
                continue  # too few pairs, or a judge that never (or always) errs there: no r
            est = paired_bootstrap(_phi, [a1, a2, b1, b2], n_boot=settings.n_boot, confidence=settings.confidence,
                                   seed=settings.seed)
            ea, eb = np.nanmean(np.r_[a1, a2]), np.nanmean(np.r_[b1, b2])
            rows.append({"source": source, "judge_a": a[0], "strategy_a": a[1], "judge_b": b[0], "strategy_b": b[1],
                         "n": int(both.sum()), "units": int(len(a1) + (~missing).sum()), "error_a": float(ea),
                         "error_b": float(eb), "both_wrong": float(np.nanmean(np.r_[a1 * b1, a2 * b2])),
                         "expected_both": float(ea * eb), "correlation": est.estimate, "ci_low": est.ci_low,
                         "ci_high": est.ci_high, "confidence": settings.confidence})
    return pd.DataFrame(rows, columns=COLUMNS)
