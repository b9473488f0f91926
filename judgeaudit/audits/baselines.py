"""Content-blind baselines beside a judge, on the labelled pairs of every subset: how
accurate a rule that never reads the answers would be.

- ``judge``: the judge's accuracy, the mean over its orders of (verdict == label) per item
  (a tie or an unparseable verdict is not right), averaged over items: LLMBar's
  "correct_average" where it saw both orders;
- ``longer`` / ``shorter``: always the response with more / fewer characters (equal
  lengths: half right, a coin's expectation);
- ``first``: always the response shown first in the pairs' own order (response_1). Over
  both orders it would be right exactly half the time by construction; in the order the
  data came in it is the share labelled "1", which is what a first-position judge scores.

Each with its n and a bootstrap CI from one set of resamples of the items. A subset where
a baseline is as accurate as the judge (its CI reaches the judge's: ``ci_high`` >= the
judge's ``ci_low``) is flagged, naming the baseline: there the judge's accuracy says nothing
a content-blind rule would not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.bias_battery import subset_groups
from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap

METHODS = ["judge", "longer", "shorter", "first"]
COLUMNS = ["source", "subset", "judge", "strategy", "method", "estimate", "ci_low", "ci_high", "n",
           "as_accurate_as_judge"]
_ITEM = ["source", "subset", "item_id"]


def item_credits(live: pd.DataFrame) -> pd.DataFrame:
    """Per labelled item ("1" or "2") of one judge's verdicts ``live``: the judge's credit
    and each baseline's, in [0, 1]."""
    labelled = live[live["label"].isin(["1", "2"])]
    right = labelled.assign(right=(labelled["verdict"] == labelled["label"]).astype(float))
    judge = right.groupby(_ITEM, sort=False)["right"].mean()
    items = labelled.drop_duplicates(_ITEM).set_index(_ITEM).loc[judge.index]
    len_1 = items["response_1"].fillna("").str.len().to_numpy()
    len_2 = items["response_2"].fillna("").str.len().to_numpy()
    is_1 = (items["label"] == "1").to_numpy()
    longer_1 = np.where(len_1 == len_2, 0.5, (len_1 > len_2).astype(float))
    return pd.DataFrame({"judge": judge.to_numpy(), "longer": np.where(is_1, longer_1, 1 - longer_1),
                         "shorter": np.where(len_1 == len_2, 0.5, np.where(is_1, 1 - longer_1, longer_1)),
                         "first": is_1.astype(float)}, index=judge.index).reset_index()


def baseline_accuracy(live: pd.DataFrame, bootstrap: BootstrapSettings) -> pd.DataFrame:
    """One row per (source, subset, judge, strategy, method) (``COLUMNS``); subsets as in
    ``audits.bias_battery``: each source by subset and whole, and everything together."""
    rows = []
    for (judge, strategy), verdicts in live.groupby(["judge", "strategy"], sort=True):
        credits = item_credits(verdicts)
        if credits.empty:
            continue
        for source, subset, part in subset_groups(credits):
            stats = {m: (lambda c, m=m: np.nanmean(c[m], axis=1)) for m in METHODS}
            est = joint_bootstrap({m: part[m].to_numpy(float) for m in METHODS}, stats, bootstrap)
            floor = est["judge"].ci_low
            for m in METHODS:
                e = est[m]
                rows.append({"source": source, "subset": subset, "judge": judge, "strategy": strategy,
                             "method": m, "estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high,
                             "n": e.n,
                             "as_accurate_as_judge": None if m == "judge" else bool(e.ci_high >= floor)})
    return pd.DataFrame(rows, columns=COLUMNS)


def flagged_subsets(accuracy: pd.DataFrame) -> pd.DataFrame:
    """The (source, subset, judge, strategy) where a baseline is as accurate as the judge,
    with ``baselines``: their names, comma-separated."""
    hit = accuracy[accuracy["as_accurate_as_judge"].eq(True)]
    keys = ["source", "subset", "judge", "strategy"]
    if hit.empty:
        return pd.DataFrame(columns=[*keys, "baselines"])
    return hit.groupby(keys, sort=False)["method"].agg(", ".join).rename("baselines").reset_index()
