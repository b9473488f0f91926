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
  attacked side follows the clean verdict, so a pair may be attacked in one audit only).
  The neutral-edit ``control`` is one of them: a judge grown more (or less) sensitive to
  any edit at all drifts there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.baselines import item_credits
from judgeaudit.audits.bias_battery import order_changes
from judgeaudit.audits.stats import BootstrapSettings, clustered_share, paired_bootstrap

ITEM = ["source", "subset", "item_id"]
COLUMNS = ["figure", "before", "now", "difference", "ci_low", "ci_high", "n", "drifted"]


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


def drift(before_live: pd.DataFrame, now_live: pd.DataFrame, before_pairs: pd.DataFrame,
          now_pairs: pd.DataFrame, boot: BootstrapSettings) -> pd.DataFrame:
    """One row per figure (``COLUMNS``) of the audit ``now`` against ``before``: clean verdicts
    (``*_live``) and battery pairs (``*_pairs``) of ``judging.battery.BatteryRun``."""
    keys = [*ITEM, "order"]
    verdicts = before_live.set_index(keys)["verdict"].to_frame("before").join(
        now_live.set_index(keys)["verdict"].rename("now"), how="inner").reset_index()
    rows = []
    if len(verdicts):
        est = clustered_share((verdicts["before"] != verdicts["now"]).to_numpy(),
                              verdicts[ITEM].astype(str).agg("/".join, axis=1).to_numpy(),
                              n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
        rows.append({"figure": "verdict_change", "before": 0.0, "now": est.estimate, "difference": est.estimate,
                     "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n, "drifted": bool(est.ci_low > 0)})
    credits = [item_credits(live) for live in (before_live, now_live)]
    if all(len(c) for c in credits):
        rows.append(_diff("accuracy", *(_per_item(c, "judge") for c in credits), boot))
    changes = [order_changes(live) for live in (before_live, now_live)]
    if all(len(c) for c in changes):
        rows.append(_diff("position", *(_per_item(c.dropna(subset=["changed"]), "changed") for c in changes), boot))
    if len(before_pairs) and len(now_pairs):
        for bias in sorted(set(before_pairs["bias"]) & set(now_pairs["bias"])):
            parts = [p[(p["bias"] == bias)].dropna(subset=["flipped"]) for p in (before_pairs, now_pairs)]
            rows.append(_diff(bias, *(_per_item(p, "flipped") for p in parts), boot))
    return pd.DataFrame([r for r in rows if r is not None], columns=COLUMNS)
