"""Can the judge replace a human annotator? The alternative annotator test (alt-test; Calderon,
Reichart and Dror, ACL 2025) on the items that carry several human labels.

Per source and (judge, strategy, presentation order), one annotator is left out at a time, and
the judge and that annotator compete to represent the others:

- on an item, each one's alignment is the share of the remaining annotators whose label it
  equals (a verdict the source's convention cannot read counts as that source's
  ``UNPARSEABLE_AS`` value, as in the report card);
- ``W_f`` = 1 where the judge aligns at least as well as the left-out annotator, ``W_h`` = 1
  where the annotator aligns at least as well as the judge (both 1 on a draw);
- H0: mean(W_h - W_f) >= epsilon, a one-sided t-test. epsilon is what the judge's lower cost
  is worth: the paper suggests 0.2 against experts, 0.15 against skilled annotators, 0.1 against
  crowd workers;
- Benjamini-Yekutieli over the annotators at level q. The winning rate is the share of
  annotators whose H0 is rejected; the judge passes where it is at least one half;
- the advantage probability rho = mean over annotators of mean(W_f): how likely the judge is
  to represent the others as well as an annotator would. It compares judges (higher is better),
  with a CI that resamples items;
- ``epsilon_to_pass``: the smallest epsilon (in steps of 0.01) at which the judge would pass,
  so that a reader who prices the judge's savings differently needs no rerun.

The paper's rules, kept: an item counts for an annotator where that annotator and at least one
other labelled it, and an annotator with fewer than ``min_items`` such items is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from judgeaudit.audits.judge_quality import with_conventions
from judgeaudit.audits.stats import BootstrapSettings, paired_bootstrap

COLUMNS = ["source", "judge", "strategy", "order", "annotator", "n", "judge_advantage", "annotator_advantage",
           "margin", "p_value", "p_by", "wins", "epsilon", "q", "annotators", "winning_rate", "passed",
           "epsilon_to_pass", "advantage_prob", "ci_low", "ci_high", "confidence"]
EPSILONS = np.round(np.arange(0, 1.001, 0.01), 2)  # epsilon_to_pass's grid


@dataclass(frozen=True)
class AltTestSettings:
    """The test's knobs (params.yaml ``real_judges.alt_test``)."""

    epsilon: float = 0.15
    q: float = 0.05
    min_items: int = 30


def _alignment(labels: np.ndarray, who: np.ndarray, left_out: int) -> np.ndarray:
    """Per item, the share of the annotators other than ``left_out`` (columns of ``labels``,
    None where one gave no label) whose label equals ``who``'s."""
    others = np.delete(labels, left_out, axis=1)
    given = pd.notna(others)
    same = (others == who[:, None]) & given
    return same.sum(axis=1) / np.maximum(given.sum(axis=1), 1)


def _p_less(diff: np.ndarray, epsilon: float | np.ndarray) -> np.ndarray:
    """One-sided t-test p-values of H0 mean(diff) >= epsilon (one per epsilon). Without
    variance the sign of mean - epsilon decides, where scipy gives nan."""
    mean, sd = diff.mean(), diff.std(ddof=1)
    if sd == 0:
        return np.where(mean < np.asarray(epsilon), 0.0, 1.0)
    t = (mean - np.asarray(epsilon)) / (sd / np.sqrt(len(diff)))
    return stats.t.cdf(t, df=len(diff) - 1)


def _winning(margins: list[np.ndarray], epsilon: float | np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(p-values, Benjamini-Yekutieli adjusted) per annotator (rows) and epsilon (columns)."""
    p = np.vstack([np.atleast_1d(_p_less(d, epsilon)) for d in margins])
    return p, np.apply_along_axis(lambda col: stats.false_discovery_control(col, method="by"), 0, p)


def _annotators(grp: pd.DataFrame) -> np.ndarray:
    """The human labels as an items x annotators object array (None: not labelled)."""
    width = max(len(h) for h in grp["human_labels"])
    return np.array([list(h) + [None] * (width - len(h)) for h in grp["human_labels"]], dtype=object)


def _one_judge(labels: np.ndarray, verdicts: np.ndarray, settings: AltTestSettings,
               boot: BootstrapSettings) -> list[dict]:
    """The per-annotator rows of one judge's test, with the judge-level figures."""
    rows, margins, wins_f = [], [], []
    for k in range(labels.shape[1]):
        counted = pd.notna(labels[:, k]) & (pd.notna(np.delete(labels, k, axis=1)).sum(axis=1) >= 1)
        if counted.sum() < settings.min_items:
            continue
        human = _alignment(labels[counted], labels[counted, k], k)
        judge = _alignment(labels[counted], verdicts[counted], k)
        w_f, w_h = (judge >= human).astype(float), (human >= judge).astype(float)
        margins.append(w_h - w_f)
        wins_f.append(np.full(len(counted), np.nan))
        wins_f[-1][counted] = w_f  # nan: the item does not count for this annotator
        rows.append({"annotator": f"annotator{k + 1}", "n": int(counted.sum()), "judge_advantage": w_f.mean(),
                     "annotator_advantage": w_h.mean(), "margin": (w_h - w_f).mean()})
    if not rows:
        return []
    p, adjusted = _winning(margins, settings.epsilon, settings.q)
    won = adjusted[:, 0] <= settings.q
    _, grid = _winning(margins, EPSILONS, settings.q)
    passing = (grid <= settings.q).mean(axis=0) >= 0.5
    rho = paired_bootstrap(lambda *cols, axis: np.mean([np.nanmean(c, axis=axis) for c in cols], axis=0), wins_f,
                           n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
    judge_level = {"epsilon": settings.epsilon, "q": settings.q, "annotators": len(rows),
                   "winning_rate": float(won.mean()), "passed": bool(won.mean() >= 0.5),
                   "epsilon_to_pass": float(EPSILONS[passing.argmax()]) if passing.any() else np.nan,
                   "advantage_prob": rho.estimate, "ci_low": rho.ci_low, "ci_high": rho.ci_high,
                   "confidence": boot.confidence}
    return [row | {"p_value": float(p[i, 0]), "p_by": float(adjusted[i, 0]), "wins": bool(won[i])} | judge_level
            for i, row in enumerate(rows)]


def alt_test(table: pd.DataFrame, settings: AltTestSettings, boot: BootstrapSettings) -> pd.DataFrame:
    """The alt-test of every (judge, strategy, order) on the items of ``table`` (a judgment
    table) that carry human labels; one row per left-out annotator (``COLUMNS``)."""
    labelled = with_conventions(table[table["human_labels"].notna()]) if len(table) else table
    out = []
    for (source, judge, strategy, order), grp in labelled.groupby(["source", "judge", "strategy", "order"],
                                                                   sort=True):
        verdicts = grp["verdict"].to_numpy(dtype=object)
        keys = {"source": source, "judge": judge, "strategy": strategy, "order": order}
        out += [keys | row for row in _one_judge(_annotators(grp), verdicts, settings, boot)]
    return pd.DataFrame(out, columns=COLUMNS)
