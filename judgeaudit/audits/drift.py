"""Drift: the same judge audited again on the same pinned pairs, every figure compared with
the previous audit. Each difference (now minus before) has its n and a paired bootstrap CI
over the items both audits judged, and is flagged where the CI excludes zero.

- ``verdict_change``: the share of (item, order) verdicts that differ between the audits
  (paired by construction; an unchanged, deterministic judge gives exactly 0). Its CI
  resamples items, the two orders of an item together.
- ``accuracy``: the judge's per-item credit (``audits.baselines.item_credits``), labelled
  items.
- ``position``: whether the item's verdict changes between the two orders.
- ``<bias>``: whether the bias flipped the pair, on pairs attacked in both audits (the
  attacked side follows the clean verdict, so a pair may be attacked in one audit only);
  ``<bias> (wrong)``: whether it turned a labelled pair to the wrong response (and
  ``position (wrong)``: whether one order's verdict is wrong where the other's is right).
- ``self_enhancement``: per prompt, the judge's win score for its own answer less the
  reference judge's on the same pair (``bias_battery.self_preference``'s per-item terms),
  where both audits measured it. The judge writes its answers afresh in each audit, so a
  changed judge may be judged on changed answers: the figure is its preference, not a pair's.
- ``score <range>``: where both audits scored pointwise, each response's expected score on
  that range as a share of the range (0 its lowest score, 1 its highest), and
  ``score <range> (better - worse)``: per labelled pair, the better response's share less the
  worse's, how far the scores tell the two apart.
- Every figure whole, per source and per subset (where there are several), as the battery
  reports them. The content-blind baselines do not depend on the judge: nothing to drift.
  The neutral-edit ``control`` is one of them: a judge grown more (or less) sensitive to
  any edit at all drifts there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.baselines import item_credits
from judgeaudit.audits.bias_battery import order_changes, subset_groups
from judgeaudit.audits.stats import BootstrapSettings, clustered_share, paired_bootstrap
from judgeaudit.judging.benchmark import score_1

ITEM = ["source", "subset", "item_id"]
COLUMNS = ["source", "subset", "figure", "before", "now", "difference", "ci_low", "ci_high", "n", "drifted"]
WRONG = " (wrong)"  # a bias's wrong-rate figure: the bias's name and this


def label(row) -> str:
    """A drift row's name: its figure, and its source and subset where it is not the whole."""
    if row["source"] == "all":
        return row["figure"]
    return row["figure"] + (f" [{row['source']}]" if row["subset"] == "all" else f" [{row['source']}/{row['subset']}]")


def _diff(name: str, before: pd.Series, now: pd.Series, boot: BootstrapSettings) -> dict | None:
    both = pd.DataFrame({"before": before, "now": now}).dropna().astype(float)
    if both.empty:
        return None
    est = paired_bootstrap(lambda a, b, axis: np.mean(b, axis=axis) - np.mean(a, axis=axis),
                           [both["before"].to_numpy(), both["now"].to_numpy()],
                           n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
    return {"figure": name, "before": float(both["before"].mean()), "now": float(both["now"].mean()),
            "difference": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n,
            "drifted": bool(est.ci_low > 0 or est.ci_high < 0)}


def _per_item(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame.set_index(ITEM)[column].astype(float)


def _in(index: pd.MultiIndex | pd.DataFrame, source: str, subset: str) -> np.ndarray:
    """Which rows of ``index`` (by its source and subset) fall in the scope (source, subset)."""
    get = index.get_level_values if isinstance(index, pd.MultiIndex) else index.__getitem__
    keep = np.ones(len(index), dtype=bool)
    if source != "all":
        keep &= np.asarray(get("source")) == source
    if subset != "all":
        keep &= np.asarray(get("subset")) == subset
    return keep


def _self_preference(verdicts: pd.DataFrame) -> pd.Series:
    """Per prompt: the judge's win score for its own answer less the reference's (roles of
    ``stages.live_judge.self_enhancement``'s verdicts)."""
    own, ref = (score_1(verdicts[verdicts["role"] == role]) for role in ("judge", "reference"))
    return (own - ref.reindex(own.index)).dropna().astype(float)


def _score_figures(scores: pd.DataFrame) -> dict[str, pd.Series]:
    """Per range of a pointwise audit's scores (``judging.live_pointwise``): each response's
    expected score as a share of the range, and per labelled pair better less worse."""
    out = {}
    for rng, part in scores.groupby("score_range", sort=False):
        low, high = (float(x) for x in str(rng).split("-"))
        share = part.set_index([*ITEM, "side"])["expected"].astype(float).sub(low).div(high - low)
        out[f"score {rng}"] = share
        by_side = share.unstack("side")
        label = part.drop_duplicates(ITEM).set_index(ITEM)["label"].reindex(by_side.index)
        if {"1", "2"} <= set(by_side.columns):
            gap = (by_side["1"] - by_side["2"]).where(label == "1", by_side["2"] - by_side["1"])
            out[f"score {rng} (better - worse)"] = gap[label.isin(["1", "2"])]
    return out


def _figures(before_live, now_live, before_pairs, now_pairs) -> list[tuple[str, pd.Series, pd.Series]]:
    """(figure, before, now): the per-item values each figure averages, in both audits."""
    out = []
    credits = [item_credits(live) for live in (before_live, now_live)]
    if all(len(c) for c in credits):
        out.append(("accuracy", *(_per_item(c, "judge") for c in credits)))
    changes = [order_changes(live) for live in (before_live, now_live)]
    if all(len(c) for c in changes):
        out.append(("position", *(_per_item(c.dropna(subset=["changed"]), "changed") for c in changes)))
        out.append(("position" + WRONG, *(_per_item(c.dropna(subset=["wrong_by_order"]), "wrong_by_order")
                                          for c in changes)))
    if len(before_pairs) and len(now_pairs):
        for bias in sorted(set(before_pairs["bias"]) & set(now_pairs["bias"])):
            parts = [p[(p["bias"] == bias)] for p in (before_pairs, now_pairs)]
            out.append((bias, *(_per_item(p.dropna(subset=["flipped"]), "flipped") for p in parts)))
            if all("turned_wrong" in p for p in parts):
                out.append((bias + WRONG, *(_per_item(p.dropna(subset=["turned_wrong"]), "turned_wrong")
                                            for p in parts)))
    return out


def drift(before_live: pd.DataFrame, now_live: pd.DataFrame, before_pairs: pd.DataFrame,
          now_pairs: pd.DataFrame, boot: BootstrapSettings, before_self: pd.DataFrame | None = None,
          now_self: pd.DataFrame | None = None, before_scores: pd.DataFrame | None = None,
          now_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per figure and scope (``COLUMNS``) of the audit ``now`` against ``before``:
    clean verdicts (``*_live``) and battery pairs (``*_pairs``) of
    ``judging.battery.BatteryRun``; each figure whole, per source and per subset, as the
    battery reports them (``bias_battery.subset_groups``). ``<bias> (wrong)``: the share of
    labelled pairs the bias turned to the wrong response. ``*_self``: the self-enhancement
    verdicts of each (``stages.live_judge.self_enhancement``), where both measured it;
    ``*_scores``: the pointwise scores of each, compared on the ranges both scored."""
    keys = [*ITEM, "order"]
    verdicts = before_live.set_index(keys)["verdict"].to_frame("before").join(
        now_live.set_index(keys)["verdict"].rename("now"), how="inner").reset_index()
    figures = _figures(before_live, now_live, before_pairs, now_pairs)
    if before_self is not None and now_self is not None and len(before_self) and len(now_self):
        figures.append(("self_enhancement", _self_preference(before_self), _self_preference(now_self)))
    if before_scores is not None and now_scores is not None:
        was, now = _score_figures(before_scores), _score_figures(now_scores)
        figures += [(name, was[name], now[name]) for name in now if name in was]
    rows = []
    for source, subset, part in subset_groups(verdicts) if len(verdicts) else ():
        scope = {"source": source, "subset": subset}
        est = clustered_share((part["before"] != part["now"]).to_numpy(),
                              part[ITEM].astype(str).agg("/".join, axis=1).to_numpy(),
                              n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
        rows.append({**scope, "figure": "verdict_change", "before": 0.0, "now": est.estimate,
                     "difference": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n,
                     "drifted": bool(est.ci_low > 0)})
        for name, before, now in figures:
            row = _diff(name, before[_in(before.index, source, subset)], now[_in(now.index, source, subset)], boot)
            if row is not None:
                rows.append({**scope, **row})
    return pd.DataFrame(rows, columns=COLUMNS)
