"""The judge report card: how far a judge's verdicts can be trusted, per (source, subset,
judge, strategy), every figure with its n and a bootstrap CI (items resampled jointly,
so the figures of one group share their resamples).

Reads the general judgment table (``sources.judgment_table``). Per item, v1 / v2 are
the verdicts with response 1 / response 2 shown first, in the original labelling.

- ``accuracy_order1`` / ``accuracy_order2``: share of labelled items where v1 (v2) equals
  the label; an unparseable verdict counts as wrong (LLMBar's scorer does the same).
  ``accuracy``: their mean (LLMBar's "correct_average"), or order 1's alone where the
  judge saw one order. ``accuracy_both``: both orders right.
- ``positional_agreement``: v1 == v2, both parsed (two unparseable verdicts are no
  agreement; LLMBar's own "equal", which counts them, is ``reproduction``'s).
- ``position_bias``: among decisive verdicts ("1"/"2") of both orders, the share for the
  response shown first, minus 1/2 (0: no bias; +: the first position wins more).
- ``kappa_label``: Cohen's kappa of verdict and label, the mean of the two orders';
  ``kappa_orders``: Cohen's kappa of v1 and v2. Categories as recorded (1, 2, tie,
  unparseable); see ``reproduction`` for LLMBar's own (different) kappa.
- Where several humans labelled each item: ``macro_precision`` / ``macro_recall`` /
  ``macro_f1`` against the majority label over the classes 1, 2, tie (scikit-learn's
  macro average, zero where a class is never predicted); ``kappa_humans`` for each pair
  of annotators (judge and strategy name the two).
- ``longer_chosen``: among decisive verdicts on pairs of unequal length (characters),
  the share for the longer response; the same figure for the label is reported under
  judge ``label``. ``unparseable_rate``: share of verdicts that did not parse.

A source may define how its own scorer reads unparseable verdicts (PandaLM's counts
"garbage" as a tie): ``UNPARSEABLE_AS`` applies it before scoring, so its figures are the
source's own.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap
from judgeaudit.sources.judgment_table import by_order

GROUP = ["source", "subset", "judge", "strategy"]
METRIC_COLUMNS = [*GROUP, "metric", "estimate", "ci_low", "ci_high", "n"]
# codes: 1, 2 = that response; 0 = tie; -1 = unparseable; -9 = missing (no such order / no label)
CODE = {"1": 1, "2": 2, "tie": 0, "unparseable": -1}
MISSING = -9
CLASSES = (1, 2, 0)
UNPARSEABLE_AS = {"pandalm": "tie"}
ALL = "all"

Stat = Callable[[dict[str, np.ndarray]], np.ndarray]


def _mean_where(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise mean of ``values`` over ``mask`` (nan where the mask is empty)."""
    count = mask.sum(axis=-1)
    return np.where(count > 0, (values * mask).sum(axis=-1) / np.maximum(count, 1), np.nan)


def kappa(a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Cohen's kappa of codes ``a`` and ``b`` over ``valid`` units, row-wise."""
    n = valid.sum(axis=-1)
    observed = ((a == b) & valid).sum(axis=-1) / np.maximum(n, 1)
    expected = np.zeros(a.shape[0])
    for c in (-1, *CLASSES):  # every category a code can take
        expected += ((a == c) & valid).sum(axis=-1) * ((b == c) & valid).sum(axis=-1) / np.maximum(n, 1) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (observed - expected) / (1 - expected)
    # both raters put every unit in one category: kappa is undefined (nan), as in scikit-learn
    return np.where((n > 0) & (expected < 1), out, np.nan)


def macro_scores(y: np.ndarray, pred: np.ndarray, valid: np.ndarray,
                 classes: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Macro precision, recall and F1 (scikit-learn's definitions, zero_division=0)."""
    p_all, r_all, f_all = [], [], []
    for c in classes:
        tp = ((pred == c) & (y == c) & valid).sum(axis=-1).astype(float)
        npred = ((pred == c) & valid).sum(axis=-1)
        ntrue = ((y == c) & valid).sum(axis=-1)
        p = np.where(npred > 0, tp / np.maximum(npred, 1), 0.0)
        r = np.where(ntrue > 0, tp / np.maximum(ntrue, 1), 0.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
        p_all.append(p), r_all.append(r), f_all.append(f)
    return {"macro_precision": np.mean(p_all, axis=0), "macro_recall": np.mean(r_all, axis=0),
            "macro_f1": np.mean(f_all, axis=0)}


def _codes(values: pd.Series) -> np.ndarray:
    return values.map(CODE).fillna(MISSING).astype(int).to_numpy()


def with_conventions(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a judgment table) with each source's own reading of an unparseable verdict
    (``UNPARSEABLE_AS``), which every audit of recorded verdicts applies before it scores."""
    hit = table["verdict"].eq("unparseable") & table["source"].isin(UNPARSEABLE_AS)
    if not hit.any():
        return table
    table = table.copy()
    table.loc[hit, "verdict"] = table.loc[hit, "source"].map(UNPARSEABLE_AS)
    return table


def item_frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, judge, strategy): codes v1, v2, label, the two lengths, and the
    model of response 1."""
    wide, items = by_order(with_conventions(table))
    out = pd.DataFrame({"v1": _codes(wide["1"]), "v2": _codes(wide["2"])}, index=wide.index)
    out["label"] = _codes(items["label"])
    out["len1"] = items["response_1"].fillna("").str.len().to_numpy()
    out["len2"] = items["response_2"].fillna("").str.len().to_numpy()
    out["humans"] = items["human_labels"].notna().to_numpy()
    out["model_1"] = items["model_1"].to_numpy()
    return out.reset_index()


def _statistics(two_orders: bool, humans: bool) -> dict[str, Stat]:
    def acc(order: str) -> Stat:
        return lambda c: _mean_where(c[order] == c["label"], c["label"] != MISSING)

    def decisive(c: dict) -> tuple[np.ndarray, ...]:
        return c["v1"] > 0, c["v2"] > 0

    def longer(c: dict) -> np.ndarray:
        unequal = c["len1"] != c["len2"]
        longer_code = np.where(c["len1"] > c["len2"], 1, 2)
        hits = sum(((c[v] == longer_code) & (c[v] > 0) & unequal).sum(axis=-1) for v in ("v1", "v2"))
        total = sum(((c[v] > 0) & unequal).sum(axis=-1) for v in ("v1", "v2"))
        return np.where(total > 0, hits / np.maximum(total, 1), np.nan)

    stats: dict[str, Stat] = {"accuracy_order1": acc("v1")}
    if two_orders:
        stats |= {
            "accuracy_order2": acc("v2"),
            "accuracy": lambda c: (acc("v1")(c) + acc("v2")(c)) / 2,
            "accuracy_both": lambda c: _mean_where((c["v1"] == c["label"]) & (c["v2"] == c["label"]),
                                                   c["label"] != MISSING),
            "positional_agreement": lambda c: np.mean((c["v1"] == c["v2"]) & (c["v1"] != CODE["unparseable"]),
                                                      axis=-1),
            "position_bias": lambda c: (((c["v1"] == 1).sum(-1) + (c["v2"] == 2).sum(-1))
                                        / np.maximum(sum(d.sum(-1) for d in decisive(c)), 1) - 0.5),
            "kappa_label": lambda c: (kappa(c["v1"], c["label"], c["label"] != MISSING)
                                      + kappa(c["v2"], c["label"], c["label"] != MISSING)) / 2,
            "kappa_orders": lambda c: kappa(c["v1"], c["v2"], np.ones_like(c["v1"], bool)),
        }
    else:
        stats |= {"accuracy": acc("v1"),
                  "kappa_label": lambda c: kappa(c["v1"], c["label"], c["label"] != MISSING)}
    if humans:
        for name in ("macro_precision", "macro_recall", "macro_f1"):
            stats[name] = (lambda key: lambda c: macro_scores(c["label"], c["v1"], c["label"] != MISSING,
                                                             CLASSES)[key])(name)
    stats["longer_chosen"] = longer
    shown = ("v1", "v2") if two_orders else ("v1",)
    stats["unparseable_rate"] = lambda c: np.mean(np.concatenate([c[v] == -1 for v in shown], axis=-1), axis=-1)
    return stats


def _counts(c: dict[str, np.ndarray], two_orders: bool) -> dict[str, int]:
    """The n behind each figure: the units it averages over."""
    labelled = int((c["label"] != MISSING).sum())
    decisive = int((c["v1"] > 0).sum() + ((c["v2"] > 0).sum() if two_orders else 0))
    unequal = c["len1"] != c["len2"]
    longer_n = int(((c["v1"] > 0) & unequal).sum() + (((c["v2"] > 0) & unequal).sum() if two_orders else 0))
    n = len(c["v1"])
    return {"accuracy_order1": labelled, "accuracy_order2": labelled, "accuracy": labelled,
            "accuracy_both": labelled, "positional_agreement": n, "position_bias": decisive,
            "kappa_label": labelled, "kappa_orders": n, "macro_precision": labelled, "macro_recall": labelled,
            "macro_f1": labelled, "longer_chosen": longer_n, "unparseable_rate": n * (1 + two_orders)}


def _rows(key: dict, estimates: dict, counts: dict) -> list[dict]:
    return [{**key, "metric": m, "estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high,
             "n": counts.get(m, e.n)} for m, e in estimates.items()]


def pooled(card: pd.DataFrame) -> pd.DataFrame:
    """The card's figures pooled over subsets: subset "all", or a source's one subset."""
    return card[(card["subset"] == ALL) | ~card["source"].isin(card.loc[card["subset"] == ALL, "source"])]


def _with_all(items: pd.DataFrame) -> pd.DataFrame:
    """The items again under subset "all" for sources with several subsets (pooled)."""
    multi = items.groupby("source")["subset"].transform("nunique") > 1
    return pd.concat([items, items[multi].assign(subset=ALL)], ignore_index=True)


def report_card(table: pd.DataFrame, settings: BootstrapSettings) -> pd.DataFrame:
    """Every figure of every (source, subset, judge, strategy), long form (``METRIC_COLUMNS``)."""
    items = _with_all(item_frame(table))
    rows: list[dict] = []
    for key, grp in items.groupby(GROUP, sort=True):
        two_orders = bool((grp["v2"] != MISSING).all())
        cols = {c: grp[c].to_numpy() for c in ("v1", "v2", "label", "len1", "len2")}
        stats = _statistics(two_orders, bool(grp["humans"].any()))
        estimates = joint_bootstrap(cols, stats, settings)
        rows += _rows(dict(zip(GROUP, key)), estimates, _counts(cols, two_orders))
    rows += _label_rows(items, settings) + human_agreement(table, settings)
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def _label_rows(items: pd.DataFrame, settings: BootstrapSettings) -> list[dict]:
    """How often the label itself favours the longer response, per source and subset."""
    rows = []
    labelled = items[items["label"] > 0].drop_duplicates(["source", "subset", "item_id"])
    for (source, subset), grp in labelled.groupby(["source", "subset"], sort=True):
        unequal = grp["len1"].to_numpy() != grp["len2"].to_numpy()
        longer = np.where(grp["len1"] > grp["len2"], 1, 2)[unequal]
        hit = (grp["label"].to_numpy()[unequal] == longer).astype(float)
        if not len(hit):
            continue
        est = joint_bootstrap({"hit": hit}, {"longer_chosen": lambda c: c["hit"].mean(axis=-1)}, settings)
        kind = "human majority" if grp["humans"].any() else "gold"
        rows += _rows({"source": source, "subset": subset, "judge": "label", "strategy": kind}, est,
                      {"longer_chosen": len(hit)})
    return rows


def human_agreement(table: pd.DataFrame, settings: BootstrapSettings) -> list[dict]:
    """Cohen's kappa between every pair of annotators, where items carry several labels."""
    with_humans = table[table["human_labels"].notna()].drop_duplicates(["source", "subset", "item_id"])
    rows = []
    for (source, subset), grp in with_humans.groupby(["source", "subset"], sort=True):
        labels = np.array([[CODE[v] for v in row] for row in grp["human_labels"]])
        for i, j in combinations(range(labels.shape[1]), 2):
            cols = {"a": labels[:, i], "b": labels[:, j]}
            est = joint_bootstrap(cols, {"kappa_humans": lambda c: kappa(c["a"], c["b"], np.ones_like(c["a"], bool))},
                                  settings)
            rows += _rows({"source": source, "subset": subset, "judge": f"annotator{i + 1}",
                           "strategy": f"annotator{j + 1}"}, est, {"kappa_humans": len(labels)})
    return rows
