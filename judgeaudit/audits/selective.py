"""Trust or escalate: a judge that abstains where it is unsure, with a guarantee of agreement with
the labels on the pairs it keeps (selective evaluation; Jung, Brahman and Choi, ICLR 2025).

Per judge (in the stage: each judge in its first-screen strategy), on labelled pairs:

- the unit is one verdict on one pair, in one presentation order drawn at random (seeded): the
  guarantee's binomial bound needs independent units, and a pair's two orders are not;
- the judge's confidence in a verdict: max(p_1, 1 - p_1) where it gives p_1 (reward models), and
  otherwise the share of all its verdicts on the pair (every strategy, both orders) that say the
  same: its own strategies stand in for the paper's simulated annotators;
- the pairs are split in halves (seeded). On the calibration half, thresholds are tested from the
  most confident down (fixed-sequence testing): a threshold holds where the exact (Clopper-Pearson)
  upper bound, at level 1 - delta, of the error rate over the units at or above it is at most alpha,
  over at least ``min_n`` units; the threshold is the last that holds before the first that does
  not. The judge keeps a verdict at or above it and escalates the rest (to a stronger judge or a
  human). Where no threshold holds it escalates everything;
- on the test half: ``coverage`` (pairs kept), ``selective_accuracy`` (agreement with the label on
  them) and ``accuracy`` (every test pair, the judge that never abstains), each with a bootstrap CI
  over pairs;
- ``target_reached``: over ``splits`` more random halvings, the share whose kept test pairs reach
  1 - alpha (one that keeps none does), with its exact binomial CI: the guarantee, checked as far as
  the pairs allow. The guarantee bounds the judge's true error rate on the pairs kept, and a test
  half of a few hundred pairs measures it with an error of a few points, so this share can fall
  below 1 - delta where the guarantee holds (it does on simulated judges whose true rates are known:
  tests/test_selective.py);
- over every verdict, both orders of each pair (these figures need no independent units, so no order is
  drawn: a pair's two verdicts are resampled together): how well the confidence tells right verdicts from
  wrong ones (``auroc``), and how far it is from the share right (``ece``, ``overconfidence``):
  audits/calibration.py. What a threshold can keep follows from them. The same three per subset of the
  source (at least ``min_n`` pairs each), where its pairs span two or more: a confidence can rank on plain
  pairs and run backwards on adversarial ones. Every other row is over all the judge's pairs (subset "all").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from judgeaudit.audits import calibration
from judgeaudit.audits.judge_quality import ALL, _mean_where, with_conventions
from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap

COLUMNS = ["source", "judge", "strategy", "subset", "confidence", "alpha", "delta", "threshold", "metric", "estimate",
           "ci_low", "ci_high", "n"]
RELIABILITY_COLUMNS = ["source", "judge", "strategy", "confidence", "bin", "bin_low", "bin_high", "n", "pairs",
                       "mean_confidence", "share_right", "ci_low", "ci_high", "ci_method"]
PAIR = ["subset", "item_id"]


@dataclass(frozen=True)
class SelectiveSettings:
    """The guarantee asked (agreement at least 1 - alpha with probability 1 - delta) and how it is
    checked (params.yaml ``real_judges.selective``)."""

    alpha: float = 0.1
    delta: float = 0.1
    min_n: int = 30
    splits: int = 200


def verdicts(table: pd.DataFrame, source: str, judge: str, strategy: str) -> tuple[pd.DataFrame, str]:
    """(every labelled verdict of ``strategy``, in each order recorded: whether it is right, the judge's
    confidence in it; the kind of confidence), in the table's row order."""
    mine = with_conventions(table[(table["source"] == source) & (table["judge"] == judge)])
    chosen = mine[(mine["strategy"] == strategy) & mine["label"].notna()]
    if chosen["p_1"].notna().all():
        confidence, kind = np.maximum(chosen["p_1"], 1 - chosen["p_1"]).to_numpy(), "p_1"
    else:
        same = mine[PAIR + ["verdict"]].merge(chosen[PAIR + ["verdict"]].drop_duplicates(), on=PAIR,
                                              suffixes=("", "_chosen"))
        share = (same["verdict"] == same["verdict_chosen"]).groupby([same[c] for c in PAIR + ["verdict_chosen"]]).mean()
        confidence = share.reindex(pd.MultiIndex.from_frame(chosen[PAIR + ["verdict"]])).to_numpy()
        kind = f"agreement of its {mine.groupby(PAIR).size().max()} verdicts per pair"
    out = chosen[PAIR + ["order"]].assign(correct=(chosen["verdict"] == chosen["label"]).to_numpy(),
                                         confidence=confidence)
    return out, kind


def units(table: pd.DataFrame, source: str, judge: str, strategy: str, seed: int) -> tuple[pd.DataFrame, str]:
    """(one labelled unit per pair: the verdict of ``strategy`` in one order drawn at random, whether it is
    right, the judge's confidence in it; the kind of confidence)."""
    every, kind = verdicts(table, source, judge, strategy)
    return _one_order(every, seed)[PAIR + ["correct", "confidence"]], kind


def _one_order(every: pd.DataFrame, seed: int) -> pd.DataFrame:
    """One of each pair's verdicts, in an order drawn at random (seeded), sorted by pair."""
    return every.sample(frac=1.0, random_state=seed).drop_duplicates(PAIR).sort_values(PAIR).reset_index(drop=True)


def threshold(confidence: np.ndarray, correct: np.ndarray, settings: SelectiveSettings) -> float:
    """The calibrated threshold (fixed-sequence testing from the most confident down); inf where
    none holds, so that every verdict is escalated."""
    levels = np.unique(confidence)[::-1]
    kept = (confidence[None, :] >= levels[:, None])
    n = kept.sum(axis=1)
    errors = (kept & ~correct[None, :]).sum(axis=1)
    upper = np.where(errors >= n, 1.0, stats.beta.ppf(1 - settings.delta, errors + 1, np.maximum(n - errors, 1)))
    tested = n >= settings.min_n
    holds = upper[tested] <= settings.alpha
    if not len(holds) or not holds[0]:
        return np.inf
    run = len(holds) if holds.all() else int(np.argmin(holds))
    return float(levels[tested][run - 1])


def _halves(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random half of ``n`` pairs (True: calibration)."""
    cal = np.zeros(n, bool)
    cal[rng.permutation(n)[: n // 2]] = True
    return cal


def _held(unit: pd.DataFrame, settings: SelectiveSettings, rng: np.random.Generator) -> np.ndarray:
    """Per random halving: whether the kept test pairs reach 1 - alpha (True where none is kept)."""
    conf, right = unit["confidence"].to_numpy(), unit["correct"].to_numpy()
    held = []
    for _ in range(settings.splits):
        cal = _halves(len(unit), rng)
        kept = ~cal & (conf >= threshold(conf[cal], right[cal], settings))
        held.append(not kept.any() or right[kept].mean() >= 1 - settings.alpha)
    return np.array(held)


def _slots(every: pd.DataFrame) -> dict[str, np.ndarray]:
    """``every`` verdict's confidence and correctness as (pairs, 2) arrays: a pair is two slots, its first and
    last order (one recorded order fills both), so that a resample of pairs takes both, every pair weighs the
    same and no draw of an order moves a figure."""
    ordered = every.sort_values(PAIR + ["order"], kind="stable")
    slots = [ordered.drop_duplicates(PAIR, keep=keep) for keep in ("first", "last")]
    return {c: np.stack([s[c].to_numpy(float) for s in slots], axis=-1) for c in ("confidence", "correct")}


def _flat(c: dict) -> dict:
    """(resamples, pairs, 2) slot columns -> (resamples, 2 x pairs) verdict columns."""
    return {k: v.reshape(*v.shape[:-2], -1) for k, v in c.items()}


def _knows(every: pd.DataFrame, boot: BootstrapSettings) -> dict:
    """The confidence figures (audits/calibration.py) of ``every`` verdict, both orders of each pair
    (``_slots``); their n is the number of pairs."""
    return joint_bootstrap(_slots(every), {name: (lambda c, f=f: f(_flat(c)))
                                           for name, f in calibration.statistics().items()}, boot)


def _by_subset(every: pd.DataFrame, settings: SelectiveSettings, boot: BootstrapSettings) -> list[tuple[str, dict]]:
    """(subset, its confidence figures) for each subset with ``min_n`` pairs or more, where the pairs span
    two subsets or more."""
    if every["subset"].nunique() < 2:
        return []
    return [(str(subset), _knows(part, boot)) for subset, part in every.groupby("subset", sort=True)
            if part["item_id"].nunique() >= settings.min_n]


def _audited(table: pd.DataFrame, chosen: pd.DataFrame, settings: SelectiveSettings,
             seed: int) -> Iterator[tuple[tuple, pd.DataFrame, str, pd.DataFrame]]:
    """(source, judge, strategy), every verdict, the kind of confidence and one unit per pair, for each row of
    ``chosen`` with at least 2 x ``min_n`` labelled pairs on which its confidence takes two values or more."""
    for r in chosen[["source", "judge", "strategy"]].drop_duplicates().itertuples(index=False):
        every, kind = verdicts(table, r.source, r.judge, r.strategy)
        unit = _one_order(every, seed)
        if len(unit) >= 2 * settings.min_n and unit["confidence"].nunique() >= 2:
            yield r, every, kind, unit


def selective(table: pd.DataFrame, chosen: pd.DataFrame, settings: SelectiveSettings,
              boot: BootstrapSettings) -> pd.DataFrame:
    """Selective evaluation of each (source, judge, strategy) row of ``chosen`` with at least
    2 x ``min_n`` labelled pairs, on which its confidence takes two values or more (``COLUMNS``:
    a row per metric; coverage, selective_accuracy and accuracy on the test half, auroc, ece and
    overconfidence on every pair and per subset, target_reached over the halvings)."""
    rows = []
    for r, every, kind, unit in _audited(table, chosen, settings, boot.seed):
        rng = np.random.default_rng(boot.seed)
        cal = _halves(len(unit), rng)
        conf, right = unit["confidence"].to_numpy(), unit["correct"].to_numpy()
        lam = threshold(conf[cal], right[cal], settings)
        test_kept, test_right = (conf >= lam)[~cal].astype(float), right[~cal].astype(float)
        est = joint_bootstrap({"kept": test_kept, "right": test_right}, {
            "coverage": lambda c: c["kept"].mean(axis=-1),
            "selective_accuracy": lambda c: _mean_where(c["right"], c["kept"] > 0),
            "accuracy": lambda c: c["right"].mean(axis=-1)}, boot)
        knows = _knows(every, boot)  # over every verdict, not a half
        held = _held(unit, settings, rng)
        ci = stats.binomtest(int(held.sum()), len(held)).proportion_ci(boot.confidence, method="exact")
        keys = {"source": r.source, "judge": r.judge, "strategy": r.strategy, "subset": ALL, "confidence": kind,
                "alpha": settings.alpha, "delta": settings.delta, "threshold": lam}
        sizes = {"coverage": len(test_kept), "selective_accuracy": int(test_kept.sum()),
                 "accuracy": len(test_kept)}
        rows += [keys | {"metric": m, "estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high,
                         "n": sizes.get(m, e.n)} for m, e in (est | knows).items()]
        rows.append(keys | {"metric": "target_reached", "estimate": float(held.mean()), "ci_low": ci.low,
                            "ci_high": ci.high, "n": len(held)})
        rows += [keys | {"subset": subset, "metric": m, "estimate": e.estimate, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "n": e.n} for subset, figures in _by_subset(every, settings, boot)
                 for m, e in figures.items()]
    return pd.DataFrame(rows, columns=COLUMNS)


def reliability(table: pd.DataFrame, chosen: pd.DataFrame, settings: SelectiveSettings,
                boot: BootstrapSettings) -> pd.DataFrame:
    """The reliability diagram behind each ECE of ``selective`` (the same judges): per bin of confidence with
    verdicts in it, both orders of every pair, their number ``n`` (a pair with one recorded order counts it
    twice), the ``pairs`` with a verdict in it (the CI's unit), mean confidence and share right, with its CI
    (``ci_method`` "bootstrap": pairs resampled; ``RELIABILITY_COLUMNS``). A bin whose verdicts are all right,
    or all wrong, leaves a resample nothing to vary (the percentile CI would be the point): its CI is the exact
    (Clopper-Pearson) one over its pairs ("exact")."""
    rows = []
    bins = calibration.ECE_BINS
    for r, every, kind, _ in _audited(table, chosen, settings, boot.seed):
        slots = _slots(every)
        conf = slots["confidence"].ravel()
        which = calibration.bin_of(conf, bins)
        shares = joint_bootstrap(slots, calibration.reliability_statistics(bins, prepare=_flat), boot)
        for b in np.unique(which):
            inside = which == b
            e = shares[f"bin_{b}"]  # its estimate is the bootstrap's own point, so it lies inside the CI
            low, high, method = e.ci_low, e.ci_high, "bootstrap"
            pairs = int(inside.reshape(-1, 2).any(axis=1).sum())
            if e.estimate in (0.0, 1.0):  # every verdict in the bin right (or every one wrong): no resample differs
                ci = stats.binomtest(pairs if e.estimate else 0, pairs).proportion_ci(boot.confidence, method="exact")
                low, high, method = ci.low, ci.high, "exact"
            rows.append({"source": r.source, "judge": r.judge, "strategy": r.strategy, "confidence": kind,
                         "bin": int(b), "bin_low": b / bins, "bin_high": (b + 1) / bins, "n": int(inside.sum()),
                         "pairs": pairs, "mean_confidence": float(conf[inside].mean()), "share_right": e.estimate,
                         "ci_low": low, "ci_high": high, "ci_method": method})
    return pd.DataFrame(rows, columns=RELIABILITY_COLUMNS)
