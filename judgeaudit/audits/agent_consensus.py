"""The agents-as-evaluator probe read as the paper reads it: every judge scores each
rewritten item 1-10; a judge's reference is the mean of the OTHER judges' scores (the
leave-one-out consensus), a score <= ``low`` saying the item is wrong and >= ``high``
that it is right.

- over-confidence of a judge = P(its score >= high | consensus <= low);
- under-confidence = P(its score <= low | consensus >= high);
- consensus error = the share of rewritten items whose consensus (the mean of every
  judge's score) is <= low: the items the judges together call wrong, the data bias an
  agents pipeline carries (no ground truth needed); beside it, ours, where the truth is
  known: the share of items whose consensus verdict contradicts the truth;
- per subject (our categories), the correlation between that data bias and the judges'
  accuracy on the original items of the subject (the paper's Table 1), with a CI
  resampling the subjects.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.audits.boat_eval import predict
from judgeaudit.audits.stats import clustered_share, mean_ci, paired_bootstrap
from judgeaudit.generation.mcq import MCQ
from judgeaudit.models.base import LanguageModel


def _rate(indicator: np.ndarray, name: str, stats: dict) -> dict:
    if len(indicator) == 0:
        return {}
    est = mean_ci(indicator.astype(float), **stats)
    return {name: est.estimate, f"{name}_ci_low": est.ci_low, f"{name}_ci_high": est.ci_high, f"{name}_n": est.n}


def _pooled(hits: list[np.ndarray], items: list[np.ndarray], name: str, stats: dict) -> dict:
    """A rate pooled over judges, its CI resampling items (a judge's rows on one item cluster)."""
    hit, item = np.concatenate(hits) if hits else np.array([]), np.concatenate(items) if items else np.array([])
    if len(hit) == 0:
        return {}
    est = clustered_share(hit, item, **stats)
    return {name: est.estimate, f"{name}_ci_low": est.ci_low, f"{name}_ci_high": est.ci_high, f"{name}_n": est.n}


def consensus_rates(table: pd.DataFrame, *, n_boot: int, confidence: float, seed: int, low: float = 5,
                    high: float = 6) -> pd.DataFrame:
    """Per (rewriter, strength): each judge's over- and under-confidence against the mean of
    the other judges' scores; "judges" (pooled over judges, CI over items); "consensus": the
    consensus error and, against the truth, its truth error."""
    stats = dict(n_boot=n_boot, confidence=confidence, seed=seed)
    rows = []
    for (rewriter, strength), group in table.groupby(["rewriter", "strength"], sort=False):
        scores = group.pivot(index="item_id", columns="judge", values="confidence")
        truth = group.groupby("item_id").holds.first().reindex(scores.index).astype(bool).to_numpy()
        pooled: dict[str, tuple[list, list]] = {"over_confidence": ([], []), "under_confidence": ([], [])}
        if scores.shape[1] > 1:
            for judge in scores.columns:
                own, others = scores[judge].to_numpy(), scores.drop(columns=judge).mean(axis=1).to_numpy()
                wrong, right = others <= low, others >= high
                over, under = own[wrong] >= high, own[right] <= low
                for name, hit, mask in (("over_confidence", over, wrong), ("under_confidence", under, right)):
                    pooled[name][0].append(hit)
                    pooled[name][1].append(scores.index.to_numpy()[mask])
                rows.append({"rewriter": rewriter, "strength": strength, "judge": judge}
                            | _rate(over, "over_confidence", stats) | _rate(under, "under_confidence", stats))
            rows.append({"rewriter": rewriter, "strength": strength, "judge": "judges"}
                        | _pooled(*pooled["over_confidence"], "over_confidence", stats)
                        | _pooled(*pooled["under_confidence"], "under_confidence", stats))
        mean = scores.mean(axis=1).to_numpy()
        decided = (mean <= low) | (mean >= high)
        rows.append({"rewriter": rewriter, "strength": strength, "judge": "consensus"}
                    | _rate(mean <= low, "consensus_error", stats)
                    | _rate((mean[decided] >= high) != truth[decided], "truth_error", stats))
    return pd.DataFrame(rows)


def category_accuracy(judges: Sequence[LanguageModel], mcqs: Sequence[MCQ], categories: Sequence[str]) -> dict:
    """Per category: the judges' mean accuracy on the original (un-rewritten) items, zero-shot."""
    right = np.mean([predict(j, mcqs, [[] for _ in mcqs]) for j in judges], axis=0)
    frame = pd.DataFrame({"category": list(categories), "right": right})
    return frame.groupby("category")["right"].mean().to_dict()


def _pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    xc, yc = x - x.mean(axis=axis, keepdims=True), y - y.mean(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (xc * yc).sum(axis=axis) / np.sqrt((xc ** 2).sum(axis=axis) * (yc ** 2).sum(axis=axis))


def subject_correlation(table: pd.DataFrame, accuracy: dict, *, n_boot: int, confidence: float, seed: int,
                        low: float = 5, exclude: Sequence[str] = ("boat",)) -> dict:
    """The paper's Table 1 on our categories: per category the data bias (consensus error of
    the agents' and the rule's rewrites, every strength pooled) and the judges' accuracy,
    and their Pearson correlation over categories with a bootstrap CI (n: categories)."""
    kept = table[~table.rewriter.isin(exclude)]
    means = kept.groupby(["rewriter", "strength", "item_id", "category"]).confidence.mean().reset_index()
    per = means.assign(wrong=means.confidence <= low).groupby("category").agg(
        data_bias=("wrong", "mean"), n_items=("wrong", "size")).reset_index()
    per = per[per.category.isin(accuracy) & (per.category != "")]
    per["accuracy"] = per.category.map(accuracy).astype(float)
    x, y = per.data_bias.to_numpy(float), per.accuracy.to_numpy(float)
    out = {"subjects": per.to_dict("records"), "n": int(len(per)), "r": None, "ci_low": None, "ci_high": None}
    if len(per) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        est = paired_bootstrap(_pearson, [x, y], n_boot=n_boot, confidence=confidence, seed=seed)
        out |= {"r": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high}
    return out
