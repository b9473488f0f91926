"""Juries of judges (audits/juries.py) and the correlation of judges' errors (error_correlation.py):
the majority rule, a jury that beats its members where their errors are independent, one that
inherits what they share (errors, position bias), and errors that go together found as such."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.juries import compare_juries, juries, jury_card, jury_verdicts
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.sources.judgment_table import COLUMNS

FAST = BootstrapSettings(n_boot=400, confidence=0.95, seed=0)
OTHER = {"1": "2", "2": "1"}


def _rows(verdicts: dict[str, list[tuple[str, str]]], labels: list[str]) -> pd.DataFrame:
    """``verdicts[judge][i]``: its verdicts on item i with response 1 shown first, then 2 (None:
    not judged in that order)."""
    rows = []
    for judge, per_item in verdicts.items():
        for i, pair in enumerate(per_item):
            for order, verdict in zip(("1", "2"), pair):
                if verdict is not None:
                    rows.append({"source": "synthetic", "subset": "all", "item_id": f"{i:04d}", "prompt": "q",
                                 "response_1": "a", "response_2": "b", "model_1": None, "model_2": None,
                                 "judge": judge, "strategy": "default", "order": order, "verdict": verdict,
                                 "p_1": None, "label": labels[i], "human_labels": None, "raw_output": None})
    return pd.DataFrame(rows, columns=COLUMNS)


def _chosen(table: pd.DataFrame) -> pd.DataFrame:
    """Every judge in its one strategy, with its accuracy (as the stage's headline gives it)."""
    right = (table.verdict == table.label).groupby(table.judge).mean()
    return pd.DataFrame({"source": "synthetic", "judge": right.index, "strategy": "default", "accuracy": right.values})


def test_a_jury_says_what_most_decisive_verdicts_say():
    """Ties and unparseable verdicts abstain, equal votes give a tie, and a pair is the jury's
    only where every member judged it."""
    table = _rows({"A": [("1", None), ("1", None), ("unparseable", None), ("tie", None), ("1", None)],
                   "B": [("1", None), ("tie", None), ("2", None), ("tie", None), ("1", None)],
                   "C": [("2", None), ("2", None), ("tie", None), ("unparseable", None), (None, None)]},
                  labels=["1", "2", "2", "1", "1"])
    jury = jury_verdicts(table, _chosen(table), "jury: all 3")
    assert list(jury.columns) == COLUMNS and set(jury.judge) == {"jury: all 3"} and set(jury.strategy) == {"majority"}
    assert jury.item_id.tolist() == ["0000", "0001", "0002", "0003"]  # item 4: C did not judge it
    assert jury.verdict.tolist() == ["1", "tie", "2", "tie"]
    assert jury.p_1.tolist()[:3] == pytest.approx([2 / 3, 1 / 2, 0.0]) and np.isnan(jury.p_1.iloc[3])
    assert jury.raw_output.tolist() == ["votes 1:2 2:1 abstain:0", "votes 1:1 2:1 abstain:1",
                                        "votes 1:0 2:1 abstain:2", "votes 1:0 2:0 abstain:3"]
    assert jury.label.tolist() == ["1", "2", "2", "1"]


def test_juries_need_three_judges():
    table = _rows({"A": [("1", "1")] * 4, "B": [("2", "2")] * 4}, labels=["1"] * 4)
    verdicts, members = juries(table, _chosen(table))
    assert verdicts.empty and members == {}


def test_independent_errors_a_jury_beats_its_best_member():
    """Five judges each right on 75% of pairs, independently: their majority is right on about
    90%, and the comparison shows it above its best member on the same pairs."""
    rng = np.random.default_rng(3)
    n = 300
    labels = list(rng.choice(["1", "2"], n))
    verdicts = {f"J{k}": [(lab, lab) if hit else (OTHER[lab], OTHER[lab])
                          for lab, hit in zip(labels, rng.random(n) < 0.75)] for k in range(5)}
    table = _rows(verdicts, labels)
    chosen = _chosen(table)
    jury, members = juries(table, chosen)
    best = chosen.sort_values("accuracy").judge.iloc[-1]
    everyone = members[("synthetic", "jury: all 5")]  # the most accurate first
    assert set(everyone) == set(chosen.judge) and everyone[0] == best
    assert members[("synthetic", f"jury: all but {best}")] == everyone[1:] and len(members) == 2
    card = jury_card(jury, FAST).set_index(["judge", "metric"])
    assert card.loc[("jury: all 5", "accuracy"), "estimate"] > 0.85 > chosen.accuracy.max()
    assert card.loc[("jury: all 5", "accuracy"), "n"] == n
    cmp = compare_juries(table, jury, members, chosen, FAST)
    row = cmp[(cmp.judge_a == "jury: all 5") & (cmp.judge_b == best)]
    assert len(row) == 1 and row.significant.all() and (row.ci_low > 0.05).all()
    # the jury without the best judge: against it, and against its own best member (3 rows in all)
    assert len(cmp) == 3 and set(cmp.strategy_a) | set(cmp.strategy_b) == {"majority", "default"}
    assert (cmp.p_holm >= cmp.p_value).all()


def test_shared_errors_and_position_bias_pass_to_the_jury():
    """Four judges pick the response shown first on the same 40% of hard pairs (right on the rest,
    90% of the time, independently); a fifth is right on 95% of pairs. The jury of the four keeps
    their position bias, and the fifth judge is more accurate than it on the same pairs."""
    rng = np.random.default_rng(5)
    n = 300
    labels = list(rng.choice(["1", "2"], n))
    hard = rng.random(n) < 0.4
    verdicts = {f"W{k}": [("1", "2") if h else ((lab, lab) if hit else (OTHER[lab], OTHER[lab]))
                          for lab, h, hit in zip(labels, hard, rng.random(n) < 0.9)] for k in range(4)}
    verdicts["strong"] = [(lab, lab) if hit else (OTHER[lab], OTHER[lab]) for lab, hit in zip(labels, rng.random(n) < 0.95)]
    table = _rows(verdicts, labels)
    chosen = _chosen(table)
    jury, members = juries(table, chosen)
    assert set(members) == {("synthetic", "jury: all 5"), ("synthetic", "jury: all but strong")}
    card = jury_card(jury, FAST).set_index(["judge", "metric"])
    bias = card.loc[("jury: all but strong", "position_bias")]
    assert bias.ci_low > 0.12  # first shown wins on every hard pair: +0.2 in expectation
    cmp = compare_juries(table, jury, members, chosen, FAST).set_index(["judge_a", "judge_b"])
    strong = cmp.loc[("strong", "jury: all but strong")]
    assert strong.significant and strong.ci_low > 0.08


def test_error_correlation_finds_judges_that_err_together():
    """B copies A's errors, C errs on its own pairs: r(A, B) = 1, r(A, C) has a CI around 0, and
    both-wrong rates stand beside their value under independence."""
    from judgeaudit.audits.error_correlation import error_correlation

    rng = np.random.default_rng(7)
    n = 400
    labels = list(rng.choice(["1", "2"], n))
    wrong_a, wrong_c = rng.random(n) < 0.3, rng.random(n) < 0.3
    verdicts = {"A": [(OTHER[lab], OTHER[lab]) if w else (lab, lab) for lab, w in zip(labels, wrong_a)],
                "C": [(OTHER[lab], lab) if w else (lab, lab) for lab, w in zip(labels, wrong_c)]}
    verdicts["B"] = verdicts["A"]
    table = _rows(verdicts, labels)
    table.loc[(table.judge == "C") & (table.item_id == "0000"), "verdict"] = "unparseable"  # errs
    corr = error_correlation(table, FAST).set_index(["judge_a", "judge_b"])
    assert list(corr.index) == [("A", "B"), ("A", "C"), ("B", "C")]
    copy, other = corr.loc[("A", "B")], corr.loc[("A", "C")]
    assert copy.correlation == pytest.approx(1.0) and copy.both_wrong == pytest.approx(copy.error_a)
    assert other.ci_low < 0 < other.ci_high and abs(other.both_wrong - other.expected_both) < 0.03
    assert copy.n == other.n == n and copy.units == 2 * n
    # C errs in order 1 only, and on both orders of the pair it could not parse
    assert other.error_b == pytest.approx((wrong_c.sum() + (not wrong_c[0]) + 1) / (2 * n))


def test_error_correlation_on_one_order_and_a_judge_without_errors():
    """Judges that saw one order count one unit per pair; a judge that never errs has no r (left out)."""
    from judgeaudit.audits.error_correlation import error_correlation

    labels = ["1", "2"] * 20
    table = _rows({"A": [("2" if i % 4 == 0 else lab, None) for i, lab in enumerate(labels)],
                   "B": [("2" if i % 4 in (0, 1) else lab, None) for i, lab in enumerate(labels)],
                   "perfect": [(lab, None) for lab in labels]}, labels)
    corr = error_correlation(table, FAST)
    assert corr[["judge_a", "judge_b"]].values.tolist() == [["A", "B"]]
    row = corr.iloc[0]
    assert row.units == row.n == 40 and row.error_a == 0.25 and row.both_wrong == 0.25
    # A errs on items 0, 4, 8...; B on those and 1, 5, 9... where the label is "2" (no error): r = 1
    assert row.correlation == pytest.approx(1.0)
    assert list(error_correlation(table.iloc[:0], FAST).columns) == list(corr.columns)  # no verdicts: no pairs
