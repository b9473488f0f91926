"""The bias battery's figures (``judging.battery.run_battery``), per judge, strategy and
bias, for each source and subset, each source whole ("all" subsets) and, with several
sources, everything ("all"/"all"); each with its n and a bootstrap CI:

- ``flip_rate``: share of the pairs the judge decided where the bias, put on the response
  it made lose, makes that response win. Position: share of the items with a verdict in
  both orders whose verdict (in the items' own labelling) changes between the orders.
- ``wrong_rate``: share of the labelled pairs the judge did not already get wrong (right,
  or tied over its orders) where the bias, put on the wrong response, makes it win.
  Position: share of the labelled items right in at least one order that the other order
  gets wrong (or ties).

A bias is ``found`` where the CI excludes zero (a share is never below zero: ci_low > 0).
Beside each bias put on an attacked copy, its difference from the neutral-edit ``control``
on the same pairs (``control_difference``: the bias's rate minus the control's, with a
paired bootstrap CI over the pairs both have): ``beyond_control`` where that CI excludes
zero above. A judge moved by any edit at all shows every bias found, none beyond control.
Position edits nothing and the control is the control: for both it is None.
``self_preference``: self-enhancement, from the judge's verdicts on its own answers
(``judging.self_enhancement``) against another judge's on the same pairs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from judgeaudit.attacks.battery import CONTROL, ORDER_ONLY
from judgeaudit.audits.stats import BootstrapSettings, mean_ci, paired_bootstrap
from judgeaudit.judging.benchmark import PAIR, score_1

KEYS = ["judge", "strategy", "bias"]
COLUMNS = ["source", "subset", *KEYS, "metric", "estimate", "ci_low", "ci_high", "n", "found"]
VS_CONTROL = ["control_difference", "control_ci_low", "control_ci_high", "control_n", "beyond_control"]
METRICS = (("flip_rate", "flipped"), ("wrong_rate", "turned_wrong"))


def subset_groups(frame: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(source, subset, rows): every source by subset and whole, and all sources together
    where there are several."""
    if frame["source"].nunique() > 1:
        yield "all", "all", frame
    for source, part in frame.groupby("source", sort=True):
        yield source, "all", part
        if part["subset"].nunique() > 1:
            for subset, sub in part.groupby("subset", sort=True):
                yield source, subset, sub


def _row(values: pd.Series, bootstrap: BootstrapSettings) -> dict:
    est = mean_ci(values.to_numpy(float), n_boot=bootstrap.n_boot, confidence=bootstrap.confidence,
                  seed=bootstrap.seed)
    return {"estimate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n,
            "found": bool(est.ci_low > 0)}


def order_changes(live: pd.DataFrame) -> pd.DataFrame:
    """Per item and judge: ``changed`` (its verdicts in the two orders differ; None unless
    both parsed) and ``wrong_by_order`` (labelled items right in at least one order: the
    other order not right; None elsewhere)."""
    keys = [*PAIR, "judge", "strategy"]
    wide = live.pivot_table(index=keys, columns="order", values="verdict", aggfunc="first")
    wide = wide.reindex(columns=["1", "2"])
    label = live.drop_duplicates(keys).set_index(keys)["label"].reindex(wide.index).to_numpy(object)
    v1, v2 = wide["1"].to_numpy(object), wide["2"].to_numpy(object)
    parsed = np.isin(v1, ["1", "2", "tie"]) & np.isin(v2, ["1", "2", "tie"])
    right_1, right_2 = v1 == label, v2 == label
    counts = np.isin(label, ["1", "2"]) & (right_1 | right_2) & parsed
    return wide.reset_index()[keys].assign(changed=np.where(parsed, v1 != v2, None),
                                           wrong_by_order=np.where(counts, ~(right_1 & right_2), None))


def battery_rates(live: pd.DataFrame, pairs: pd.DataFrame, bootstrap: BootstrapSettings,
                  position: bool = True) -> pd.DataFrame:
    """One row per (source, subset, judge, strategy, bias, metric) (``COLUMNS``): the
    figures of ``pairs`` (``judging.battery.BatteryRun.pairs``) and, with ``position``, the
    position bias of the clean verdicts ``live``."""
    rows = []
    frames = []
    if position and not live.empty:
        changes = order_changes(live)
        frames.append(changes.assign(bias="position", flipped=changes["changed"],
                                     turned_wrong=changes["wrong_by_order"]))
    if not pairs.empty:
        frames.append(pairs)
    for frame in frames:
        for key, by_bias in frame.groupby(KEYS, sort=False):
            for source, subset, part in subset_groups(by_bias):
                for metric, column in METRICS:
                    values = part[column].dropna()
                    if len(values):
                        rows.append({"source": source, "subset": subset, **dict(zip(KEYS, key)),
                                     "metric": metric, **_row(values.astype(float), bootstrap)})
    rates = pd.DataFrame(rows, columns=COLUMNS)
    versus = control_differences(pairs, bootstrap)
    keys = ["source", "subset", *KEYS, "metric"]
    out = rates.merge(versus, on=keys, how="left") if len(versus) else rates.assign(**{c: None for c in VS_CONTROL})
    out["control_n"] = out["control_n"].astype("Int64")
    out["beyond_control"] = out["beyond_control"].astype(object).where(out["beyond_control"].notna(), None)
    return out[COLUMNS + VS_CONTROL]


def control_differences(pairs: pd.DataFrame, bootstrap: BootstrapSettings) -> pd.DataFrame:
    """Per (source, subset, judge, strategy, bias, metric) of every bias on an attacked copy
    but the control: the bias's rate minus the control's on the pairs both measured (the
    same attacked side, from the same clean verdicts), with a paired bootstrap CI;
    ``beyond_control`` where the CI's low end is above zero. Empty without control pairs."""
    if pairs.empty or CONTROL not in set(pairs["bias"]):
        return pd.DataFrame(columns=["source", "subset", *KEYS, "metric", *VS_CONTROL])
    rows = []
    for (judge, strategy), frame in pairs.groupby(["judge", "strategy"], sort=False):
        control = frame[frame["bias"] == CONTROL].set_index(PAIR)
        for bias, part in frame.groupby("bias", sort=False):
            if bias == CONTROL or bias in ORDER_ONLY:
                continue
            # the groups of the bias's own rates (battery_rates), each metric's pairs within them
            joined = part.set_index(PAIR)[[c for _, c in METRICS]].join(
                control[[c for _, c in METRICS]], rsuffix="_control").reset_index()
            for source, subset, group in subset_groups(joined):
                for metric, column in METRICS:
                    both = group[[column, f"{column}_control"]].dropna().astype(float)
                    if both.empty:
                        continue
                    est = paired_bootstrap(lambda a, b, axis: np.mean(a - b, axis=axis),
                                           [both[column].to_numpy(), both[f"{column}_control"].to_numpy()],
                                           n_boot=bootstrap.n_boot, confidence=bootstrap.confidence,
                                           seed=bootstrap.seed)
                    rows.append({"source": source, "subset": subset, "judge": judge, "strategy": strategy,
                                 "bias": bias, "metric": metric, "control_difference": est.estimate,
                                 "control_ci_low": est.ci_low, "control_ci_high": est.ci_high,
                                 "control_n": est.n, "beyond_control": bool(est.ci_low > 0)})
    return pd.DataFrame(rows, columns=["source", "subset", *KEYS, "metric", *VS_CONTROL])


def self_preference(own: pd.DataFrame, reference: pd.DataFrame, bootstrap: BootstrapSettings) -> pd.DataFrame:
    """Self-enhancement per source and subset (``subset_groups``): ``own`` is the judge's verdicts on pairs of its own answer
    (response_1) against another (``judging.self_enhancement.self_enhancement_items``),
    ``reference`` another judge's verdicts on the same pairs. Rows (``COLUMNS``, bias
    "self_enhancement"): ``own_win_rate`` (the judge's mean win score of its own answer,
    ties counting half), ``reference_win_rate`` (the other judge's on the same pairs) and
    ``self_preference``, their difference with a paired bootstrap CI; found where its CI
    excludes zero (either way: a judge may also run down its own answers)."""
    mine, theirs = score_1(own), score_1(reference)
    both = pd.DataFrame({"own": mine, "reference": theirs.reindex(mine.index)}).dropna().reset_index()
    judge, strategy = own["judge"].iloc[0], own["strategy"].iloc[0]
    rows = []
    for source, subset, part in subset_groups(both) if len(both) else ():
        base = {"source": source, "subset": subset, "judge": judge, "strategy": strategy,
                "bias": "self_enhancement"}
        for metric, col in (("own_win_rate", "own"), ("reference_win_rate", "reference")):
            rows.append({**base, "metric": metric, **_row(part[col], bootstrap), "found": None})
        est = paired_bootstrap(lambda a, b, axis: np.mean(a - b, axis=axis),
                               [part["own"].to_numpy(), part["reference"].to_numpy()],
                               n_boot=bootstrap.n_boot, confidence=bootstrap.confidence, seed=bootstrap.seed)
        rows.append({**base, "metric": "self_preference", "estimate": est.estimate, "ci_low": est.ci_low,
                     "ci_high": est.ci_high, "n": est.n, "found": bool(est.ci_low > 0 or est.ci_high < 0)})
    return pd.DataFrame(rows, columns=COLUMNS)
