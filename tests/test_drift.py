"""Drift between two audits of a judge on the same pinned pairs: an unchanged judge shows
none; a judge that changed is flagged, with each difference's n and CI."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.drift import drift
from judgeaudit.audits.stats import BootstrapSettings

BOOT = BootstrapSettings(500, 0.95, 0)


def _live(verdict_of, n: int = 40) -> pd.DataFrame:
    """A judge's clean verdicts on ``n`` labelled pairs in both orders; ``verdict_of(i, order)``."""
    rows = []
    for i in range(n):
        for order in ("1", "2"):
            rows.append({"source": "llmbar", "subset": "s", "item_id": str(i), "order": order,
                         "verdict": verdict_of(i, order), "label": "1" if i % 2 else "2",
                         "response_1": "a" * (5 + i), "response_2": "b" * 9, "judge": "j", "strategy": "m"})
    return pd.DataFrame(rows)


def _pairs(flipped) -> pd.DataFrame:
    return pd.DataFrame({"source": "llmbar", "subset": "s", "item_id": [str(i) for i in range(40)],
                         "bias": "verbosity", "flipped": [flipped(i) for i in range(40)]})


def test_an_unchanged_judge_shows_no_drift():
    right = _live(lambda i, o: "1" if i % 2 else "2")
    table = drift(right, right.copy(), _pairs(lambda i: i % 3 == 0), _pairs(lambda i: i % 3 == 0), BOOT)
    assert set(table["figure"]) == {"verdict_change", "accuracy", "position", "position (wrong)", "verbosity"}
    assert set(zip(table["source"], table["subset"])) == {("llmbar", "all")}  # one subset: the whole only
    assert not table["drifted"].any()
    assert (table["difference"] == 0).all() and (table["n"] > 0).all()


def test_a_changed_judge_is_flagged_with_its_ci():
    before = _live(lambda i, o: "1" if i % 2 else "2")  # always right
    now = _live(lambda i, o: ("1" if i % 2 else "2") if i % 4 else ("2" if i % 2 else "1"))  # a quarter wrong
    table = drift(before, now, _pairs(lambda i: False), _pairs(lambda i: i % 2 == 0), BOOT).set_index("figure")
    change = table.loc["verdict_change"]
    assert change["drifted"] and np.isclose(change["difference"], 0.25) and change["n"] == 40
    acc = table.loc["accuracy"]
    assert acc["drifted"] and acc["ci_high"] < 0 and np.isclose(acc["difference"], -0.25)
    assert table.loc["verbosity", "drifted"] and table.loc["verbosity", "ci_low"] > 0
    assert not table.loc["position", "drifted"]  # both judges agree with themselves across orders


def test_the_control_is_compared_too():
    """A judge grown sensitive to any edit: the neutral-edit control drifts beside the bias."""
    right = _live(lambda i, o: "1" if i % 2 else "2")
    before = pd.concat([_pairs(lambda i: False), _pairs(lambda i: False).assign(bias="control")])
    now = pd.concat([_pairs(lambda i: i % 2 == 0), _pairs(lambda i: i % 2 == 0).assign(bias="control")])
    table = drift(right, right.copy(), before, now, BOOT).set_index("figure")
    assert {"verbosity", "control"} <= set(table.index)
    assert table.loc["control", "drifted"] and np.isclose(table.loc["control", "difference"], 0.5)
    assert table.loc["control", "n"] == 40


def test_each_figure_is_compared_per_subset_and_as_the_wrong_rate():
    """A judge changed on one subset only: flagged there and in the whole, not in the other
    subset; a bias that now turns labelled pairs to the wrong response drifts as its wrong rate."""
    right = lambda i, o: "1" if i % 2 else "2"  # noqa: E731
    before = _live(right).assign(subset=lambda f: np.where(f["item_id"].astype(int) < 20, "s", "t"))
    now = _live(lambda i, o: right(i, o) if i < 20 else ("2" if i % 2 else "1")).assign(subset=before["subset"])
    pairs = [_pairs(lambda i: False).assign(subset=np.where(np.arange(40) < 20, "s", "t"), turned_wrong=False),
             _pairs(lambda i: i >= 20).assign(subset=np.where(np.arange(40) < 20, "s", "t"),
                                              turned_wrong=[i >= 20 for i in range(40)])]
    table = drift(before, now, *pairs, BOOT)
    at = table.set_index(["subset", "figure"])
    assert at.loc[("t", "accuracy"), "drifted"] and not at.loc[("s", "accuracy"), "drifted"]
    assert at.loc[("all", "accuracy"), "drifted"] and at.loc[("t", "accuracy"), "n"] == 20
    assert at.loc[("t", "verbosity (wrong)"), "drifted"] and not at.loc[("s", "verbosity (wrong)"), "drifted"]
    assert np.isclose(at.loc[("t", "verbosity (wrong)"), "difference"], 1.0)
    from judgeaudit.audits.drift import label

    moved = {label(r) for r in table.to_dict("records") if r["drifted"]}
    assert "accuracy [llmbar/t]" in moved and "accuracy [llmbar/s]" not in moved


def _self(own_wins) -> pd.DataFrame:
    """Self-enhancement verdicts on 40 pairs (response 1: the judge's own answer), both
    orders: the judge picks its own where ``own_wins(i)``, the reference every other pair."""
    rows = []
    for i in range(40):
        for role, wins in (("judge", own_wins(i)), ("reference", i % 2 == 0)):
            for order in ("1", "2"):
                rows.append({"source": "llmbar", "subset": "s", "item_id": str(i), "order": order, "role": role,
                             "verdict": "1" if wins else "2"})
    return pd.DataFrame(rows)


def test_self_enhancement_drifts_where_the_judge_came_to_prefer_its_own_answers():
    right = _live(lambda i, o: "1" if i % 2 else "2")
    same = drift(right, right.copy(), _pairs(lambda i: False), _pairs(lambda i: False), BOOT,
                 _self(lambda i: i % 2 == 0), _self(lambda i: i % 2 == 0)).set_index("figure")
    assert same.loc["self_enhancement", "n"] == 40 and not same.loc["self_enhancement", "drifted"]
    assert same.loc["self_enhancement", "before"] == 0  # as the reference: no self-preference
    grown = drift(right, right.copy(), _pairs(lambda i: False), _pairs(lambda i: False), BOOT,
                  _self(lambda i: i % 2 == 0), _self(lambda i: i % 4 != 1)).set_index("figure")
    row = grown.loc["self_enhancement"]
    assert row["drifted"] and row["ci_low"] > 0 and np.isclose(row["difference"], 0.25)
    # an audit that measured none: the figure is left out, not compared against nothing
    none = drift(right, right.copy(), _pairs(lambda i: False), _pairs(lambda i: False), BOOT, None,
                 _self(lambda i: True))
    assert "self_enhancement" not in set(none["figure"])


def _scores(expected_of) -> pd.DataFrame:
    """Pointwise scores on 1-5 of both responses of 40 labelled pairs: ``expected_of(i, side)``."""
    return pd.DataFrame([{"source": "llmbar", "subset": "s", "item_id": str(i), "side": side,
                          "label": "1" if i % 2 else "2", "score_range": "1-5", "greedy": 3,
                          "expected": expected_of(i, side)} for i in range(40) for side in ("1", "2")])


def test_pointwise_scores_drift_where_the_judge_stopped_telling_the_responses_apart():
    right = _live(lambda i, o: "1" if i % 2 else "2")
    none = _pairs(lambda i: False)
    apart = _scores(lambda i, side: 4.6 if side == ("1" if i % 2 else "2") else 1.4)  # better 4.6, worse 1.4
    same = drift(right, right.copy(), none, none, BOOT, None, None, apart, apart.copy()).set_index("figure")
    assert {"score 1-5", "score 1-5 (better - worse)"} <= set(same.index)
    assert np.isclose(same.loc["score 1-5 (better - worse)", "before"], 0.8)  # (4.6 - 1.4) / 4
    assert not same["drifted"].any()
    blurred = _scores(lambda i, side: 3.2 if side == ("1" if i % 2 else "2") else 2.8)
    table = drift(right, right.copy(), none, none, BOOT, None, None, apart, blurred).set_index("figure")
    gap = table.loc["score 1-5 (better - worse)"]
    assert gap["drifted"] and np.isclose(gap["difference"], -0.7) and gap["n"] == 40
    level = table.loc["score 1-5"]
    assert level["n"] == 80 and not level["drifted"]  # the mean score level stayed at 3
