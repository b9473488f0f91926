"""How far presentation attacks move a judge on real pairs (``judging.benchmark.attack_items``):
per judge, strategy, attack and subset (and "all"), with its n and a bootstrap CI

- ``flip_rate``: share of the pairs the judge decided where attacking the response it made
  lose makes that response win;
- ``fooled_rate``: the same over the labelled pairs the judge had right, where the attacked
  response is the wrong one: the share of its right verdicts the attack turns wrong.
"""

from __future__ import annotations

import pandas as pd

from judgeaudit.audits.stats import BootstrapSettings, mean_ci

KEYS = ["source", "judge", "strategy", "attack"]


def flip_rates(flips: pd.DataFrame, bootstrap: BootstrapSettings) -> pd.DataFrame:
    """One row per (source, judge, strategy, attack, subset, metric): estimate, ci_low,
    ci_high, n, as the report card's rows."""
    rows = []
    if flips.empty:
        return pd.DataFrame(columns=[*KEYS, "subset", "metric", "estimate", "ci_low", "ci_high", "n"])
    for key, group in flips.groupby(KEYS, sort=True):
        parts = [("all", group)] + (list(group.groupby("subset", sort=True)) if group.subset.nunique() > 1 else [])
        for subset, part in parts:
            right = part[part["right_before"].eq(True)]  # True, False, or None where unlabelled
            for metric, values in (("flip_rate", part["flipped"]), ("fooled_rate", right["flipped"])):
                if not len(values):
                    continue
                est = mean_ci(values.to_numpy(float), n_boot=bootstrap.n_boot, confidence=bootstrap.confidence,
                              seed=bootstrap.seed)
                rows.append({**dict(zip(KEYS, key)), "subset": subset, "metric": metric, "estimate": est.estimate,
                             "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n})
    return pd.DataFrame(rows)
