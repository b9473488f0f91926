"""Trust or escalate (audits/selective.py): the calibrated threshold against the exact binomial bound
worked by hand, a judge whose confidence tells its errors apart keeping its sure pairs with the
promised agreement, one whose confidence says nothing escalating every pair, the two kinds of
confidence (a reward model's p_1, the agreement of a judge's own verdicts), and how far a confidence can
be trusted (audits/calibration.py: AUROC and ECE against their definitions, on judges calibrated,
overconfident, uninformative and surer when wrong, and per subset, where a judge that ranks on plain pairs
and runs backwards on adversarial ones looks merely blind overall)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgeaudit.audits.calibration import auroc, ece, overconfidence, reliability_statistics
from judgeaudit.audits.selective import (COLUMNS, PAIR, RELIABILITY_COLUMNS, SelectiveSettings, reliability, selective,
                                         threshold, units, verdicts)
from judgeaudit.audits.stats import BootstrapSettings, joint_bootstrap
from judgeaudit.sources.judgment_table import COLUMNS as TABLE_COLUMNS

FAST = BootstrapSettings(n_boot=300, confidence=0.95, seed=0)


def _row(judge: str, strategy: str, item: int, order: str, verdict: str, label: str, p_1: float | None = None,
         subset: str = "all") -> dict:
    return {"source": "synthetic", "subset": subset, "item_id": f"{item:04d}", "prompt": "q", "response_1": "a",
            "response_2": "b", "model_1": None, "model_2": None, "judge": judge, "strategy": strategy,
            "order": order, "verdict": verdict, "p_1": p_1, "label": label, "human_labels": None, "raw_output": None}


def _reward_model(name: str, n: int, informative: bool, seed: int) -> list[dict]:
    """A reward model's rows (both orders, one p_1): with ``informative``, wrong only where it is unsure
    (p_1 within 1/4 of 1/2: then right 45% of the time); otherwise wrong on a quarter of the pairs whatever
    its confidence."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = "1" if i % 2 else "2"
        sure = rng.uniform(0.5, 1.0)
        right = rng.random() < (1.0 if sure > 0.75 else 0.45) if informative else rng.random() < 0.75
        verdict = label if right else {"1": "2", "2": "1"}[label]
        p_1 = sure if verdict == "1" else 1 - sure
        rows += [_row(name, "reward_model", i, order, verdict, label, p_1) for order in ("1", "2")]
    return rows


def test_threshold_is_the_last_level_whose_exact_bound_holds():
    settings = SelectiveSettings(alpha=0.2, delta=0.1, min_n=5)
    confidence = np.array([0.9] * 20 + [0.8] * 20 + [0.7] * 20)
    correct = np.array([True] * 20 + [True] * 18 + [False] * 2 + [False] * 12 + [True] * 8)
    # the upper bound of the error rate over the units at or above each level, worked out with scipy's own test
    bound = [stats.binomtest(k, n, alternative="less").proportion_ci(0.9, method="exact").high
             for k, n in ((0, 20), (2, 40), (14, 60))]
    assert bound[0] <= 0.2 and bound[1] <= 0.2 < bound[2]
    assert threshold(confidence, correct, settings) == 0.8
    # a level over fewer than min_n units is not tested; none that holds: escalate everything
    assert threshold(confidence, correct, SelectiveSettings(alpha=0.2, delta=0.1, min_n=30)) == 0.8
    assert threshold(confidence, correct, SelectiveSettings(alpha=0.1, delta=0.1, min_n=5)) == np.inf
    # the sequence stops at the first level that fails, even where a lower one would hold again
    dip = np.array([True] * 20 + [False] * 10 + [True] * 90)
    conf = np.r_[[0.9] * 20, [0.8] * 10, [0.7] * 90]
    assert threshold(conf, dip, SelectiveSettings(alpha=0.2, delta=0.1, min_n=5)) == 0.9


def test_a_judge_whose_confidence_tells_its_errors_apart_keeps_its_sure_pairs():
    table = pd.DataFrame(_reward_model("sure", 400, True, 1) + _reward_model("blind", 400, False, 2),
                         columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": "synthetic", "judge": ["sure", "blind"], "strategy": "reward_model"})
    settings = SelectiveSettings(alpha=0.1, delta=0.1, min_n=30, splits=100)
    result = selective(table, chosen, settings, FAST)
    assert list(result.columns) == COLUMNS and len(result) == 14
    wide = result.pivot(index="judge", columns="metric", values="estimate")
    n = result.pivot(index="judge", columns="metric", values="n")
    assert set(result.confidence) == {"p_1"}
    # the informative one keeps about half the pairs, right on 90% of them or more, far above its overall rate
    assert 0.3 < wide.loc["sure", "coverage"] < 0.7 and wide.loc["sure", "selective_accuracy"] >= 0.9
    assert wide.loc["sure", "selective_accuracy"] > wide.loc["sure", "accuracy"] + 0.1
    assert n.loc["sure", "coverage"] == 200 and n.loc["sure", "selective_accuracy"] < 200
    # the test half's own agreement misses 90% now and then by chance (see the next test for the guarantee)
    assert wide.loc["sure", "target_reached"] >= 0.7 and n.loc["sure", "target_reached"] == 100
    # 75% right whatever it says: no threshold gives 90%, every pair goes up
    blind = result[result.judge == "blind"]
    assert np.isinf(blind.threshold).all() and wide.loc["blind", "coverage"] == 0
    assert np.isnan(wide.loc["blind", "selective_accuracy"]) and 0.65 < wide.loc["blind", "accuracy"] < 0.85
    kept = result[result.metric != "selective_accuracy"]
    assert (kept.ci_low <= kept.estimate).all() and (kept.estimate <= kept.ci_high).all()
    # why: the one's confidence ranks its right verdicts above its wrong ones, the other's does not (over all
    # 400 pairs, not the test half)
    ci = result.set_index(["judge", "metric"])
    assert ci.loc[("sure", "auroc"), "ci_low"] > 0.7 and ci.loc[("sure", "auroc"), "n"] == 400
    assert ci.loc[("blind", "auroc"), "ci_low"] < 0.5 < ci.loc[("blind", "auroc"), "ci_high"]


def test_confidence_is_the_agreement_of_the_judges_own_verdicts_and_one_order_per_pair():
    rows = []
    for i, votes in enumerate((["1"] * 4, ["1", "1", "1", "2"], ["1", "2", "2", "2"])):
        for (strategy, order), verdict in zip([("A", "1"), ("A", "2"), ("B", "1"), ("B", "2")], votes):
            rows.append(_row("j", strategy, i, order, verdict, "1"))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    unit, kind = units(table, "synthetic", "j", "A", seed=0)
    assert kind == "agreement of its 4 verdicts per pair" and len(unit) == 3  # one order of each pair
    # pair 0: all agree; pair 1: A says "1" in both orders, 3 of 4 agree; pair 2: A's order 1 says "1" (1 of 4)
    # and its order 2 says "2" (3 of 4)
    assert unit.confidence.iloc[0] == 1.0 and unit.confidence.iloc[1] == 0.75
    assert unit.confidence.iloc[2] in (0.25, 0.75) and unit.correct.iloc[2] == (unit.confidence.iloc[2] == 0.25)
    assert units(table, "synthetic", "j", "A", seed=0)[0].equals(unit)  # the order drawn is seeded
    # too few pairs to calibrate on: no rows rather than a guess
    chosen = pd.DataFrame({"source": ["synthetic"], "judge": ["j"], "strategy": ["A"]})
    assert selective(table, chosen, SelectiveSettings(), FAST).empty


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_a_looser_target_keeps_more(alpha):
    table = pd.DataFrame(_reward_model("sure", 400, True, 3), columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": ["synthetic"], "judge": ["sure"], "strategy": ["reward_model"]})
    strict, loose = (selective(table, chosen, SelectiveSettings(alpha=a, splits=20), FAST) for a in (0.05, alpha))
    cover = {name: r[r.metric == "coverage"].estimate.iloc[0] for name, r in (("strict", strict), ("loose", loose))}
    assert cover["loose"] >= cover["strict"]


def test_the_guarantee_holds_on_the_true_error_rate():
    """Over fresh calibration sets of a judge whose true error rate at each threshold is known, the
    threshold's true error rate is at most alpha in at least 1 - delta of them."""
    alpha, delta = 0.1, 0.1
    settings = SelectiveSettings(alpha=alpha, delta=delta, min_n=30)
    rng = np.random.default_rng(5)

    def true_error(lam: float) -> float:  # confidence ~ U(0.5, 1); wrong with p 0.55 below 0.75, never above
        return 0.0 if lam >= 0.75 else 0.55 * (0.75 - max(lam, 0.5)) / (1 - max(lam, 0.5))

    risks, kept = [], []
    for _ in range(300):
        conf = rng.uniform(0.5, 1.0, 200)
        correct = np.where(conf > 0.75, True, rng.random(200) < 0.45)
        lam = threshold(conf, correct, settings)
        risks.append(true_error(lam) if np.isfinite(lam) else 0.0)
        kept.append(np.isfinite(lam))
    assert np.mean(np.array(risks) <= alpha) >= 1 - delta
    assert np.mean(kept) > 0.9 and max(risks) > 0.02  # it keeps pairs, some of them unsure ones


def test_the_commands_say_what_each_judge_keeps():
    from judgeaudit.cli.verdicts import _selective_line

    every = {"estimate": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 100}
    none = {"estimate": None, "ci_low": None, "ci_high": None, "n": 0}
    record = {"source": "s", "judge": "j", "strategy": "x", "alpha": 0.1, "accuracy": every}
    assert "escalates every pair" in _selective_line(record | {"threshold": None, "coverage": every,
                                                               "selective_accuracy": none})
    # a threshold from the calibration half that no test pair reaches
    assert "keeps none of the test pairs" in _selective_line(record | {"threshold": 0.99, "coverage": every,
                                                                       "selective_accuracy": none})
    kept = {"estimate": 0.95, "ci_low": 0.9, "ci_high": 0.99, "n": 40}
    line = _selective_line(record | {"threshold": 0.8, "coverage": every, "selective_accuracy": kept})
    assert "keeps 70.0% [60.0%, 80.0%]" in line and "agreement 0.950 [0.900, 0.990] (n=40)" in line


def test_auroc_and_ece_are_their_definitions_row_by_row():
    conf = np.array([0.95, 0.9, 0.9, 0.75, 0.6, 0.55, 0.3, 0.72])
    right = np.array([1, 1, 0, 1, 0, 1, 0, 0], dtype=float)
    # AUROC: over every (right, wrong) pair, the share where the right one is surer, ties counting half
    pairs = [(a, b) for a, r in zip(conf, right) if r for b, w in zip(conf, right) if not w]
    by_hand = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs])
    assert auroc(conf[None], right[None])[0] == pytest.approx(by_hand)
    assert by_hand == pytest.approx(stats.mannwhitneyu(conf[right > 0], conf[right == 0]).statistic / 16)
    # ECE over ten bins: {0.95, 0.9, 0.9} (2 of 3 right), {0.75, 0.72} (1 of 2), {0.6} (0), {0.55} (1), {0.3} (0)
    gaps = [abs(2 - 2.75), abs(1 - 1.47), abs(0 - 0.6), abs(1 - 0.55), abs(0 - 0.3)]
    assert ece(conf[None], right[None])[0] == pytest.approx(sum(gaps) / 8)
    assert overconfidence(conf[None], right[None])[0] == pytest.approx(conf.mean() - right.mean())
    # 2-D: one value per row (a row per bootstrap resample), nan where a row has no wrong verdict
    rows = np.vstack([conf, conf[::-1]]), np.vstack([right, np.ones(8)])
    assert np.isnan(auroc(*rows)[1]) and auroc(*rows)[0] == pytest.approx(by_hand) and ece(*rows).shape == (2,)
    # a confidence of exactly 0.9 (27 of 30 verdicts) lies in the 0.9 bin, not below it
    assert ece(np.array([27 / 30, 0.85]), np.array([1.0, 0.0])) == pytest.approx((0.1 + 0.85) / 2)


def _judge_by_confidence(name: str, n: int, right_given: callable, seed: int, subset: str = "all",
                         first: int = 0) -> list[dict]:
    """A reward model's rows (items ``first``...) whose confidence c ~ U(0.5, 1) and whose verdict is right
    with probability ``right_given(c)``."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(first, first + n):
        label, sure = ("1" if i % 2 else "2"), rng.uniform(0.5, 1.0)
        verdict = label if rng.random() < right_given(sure) else {"1": "2", "2": "1"}[label]
        p_1 = sure if verdict == "1" else 1 - sure
        rows += [_row(name, "reward_model", i, order, verdict, label, p_1, subset) for order in ("1", "2")]
    return rows


def test_calibrated_overconfident_and_surer_when_wrong_judges_are_told_apart():
    judges = {"calibrated": lambda c: c, "overconfident": lambda c: c - 0.25, "backwards": lambda c: 1.5 - c}
    rows = [r for k, (name, f) in enumerate(judges.items()) for r in _judge_by_confidence(name, 600, f, k)]
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": "synthetic", "judge": list(judges), "strategy": "reward_model"})
    result = selective(table, chosen, SelectiveSettings(splits=10), FAST).set_index(["judge", "metric"])
    est, low, high = (result[c] for c in ("estimate", "ci_low", "ci_high"))
    # right as often as it is sure: ECE near 0 and no over- or underconfidence; its confidence ranks
    assert est["calibrated", "ece"] < 0.06
    assert low["calibrated", "overconfidence"] < 0 < high["calibrated", "overconfidence"]
    assert low["calibrated", "auroc"] > 0.55
    # the same ranking, a quarter less right than it claims
    assert 0.18 < low["overconfident", "overconfidence"] and high["overconfident", "overconfidence"] < 0.32
    assert est["overconfident", "ece"] > 0.18 and low["overconfident", "auroc"] > 0.55
    # right less often the surer it is: AUROC below a half, with its whole CI
    assert high["backwards", "auroc"] < 0.45 and np.isinf(result.loc["backwards", "threshold"]).all()


def test_a_confidence_that_ranks_on_plain_pairs_and_runs_backwards_on_adversarial_ones():
    """Overall the two halves cancel (AUROC near 0.5); per subset, the rows tell them apart, each equal to the
    figure computed on that subset's verdicts alone. A subset under ``min_n`` pairs gets no rows."""
    rows = (_judge_by_confidence("j", 300, lambda c: c, 7, "plain")
            + _judge_by_confidence("j", 300, lambda c: 1.5 - c, 8, "adversarial", first=300)
            + _judge_by_confidence("j", 20, lambda c: c, 9, "rare", first=600))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": ["synthetic"], "judge": ["j"], "strategy": ["reward_model"]})
    result = selective(table, chosen, SelectiveSettings(splits=10), FAST)
    parts = result[result.subset != "all"]
    assert set(parts.metric) == {"auroc", "ece", "overconfidence"} and set(parts.subset) == {"plain", "adversarial"}
    assert len(result[result.subset == "all"]) == 7
    ci = result.set_index(["subset", "metric"])
    assert ci.loc[("all", "auroc"), "n"] == 620  # the rare subset's pairs count overall
    assert ci.loc[("plain", "auroc"), "ci_low"] > 0.6 and ci.loc[("adversarial", "auroc"), "ci_high"] < 0.4
    assert ci.loc[("all", "auroc"), "ci_low"] < 0.5 + 0.1 and ci.loc[("all", "auroc"), "ci_high"] > 0.5 - 0.1
    unit, _ = units(table, "synthetic", "j", "reward_model", FAST.seed)
    plain = unit[unit.subset == "plain"]
    assert ci.loc[("plain", "auroc"), "estimate"] == pytest.approx(
        auroc(plain.confidence.to_numpy()[None], plain.correct.to_numpy()[None])[0])
    assert ci.loc[("plain", "auroc"), "n"] == 300
    # the summary and the command's line carry the per-subset figures, from the worst to the best
    from judgeaudit.cli.verdicts import _selective_line
    from judgeaudit.stages.real_judges import trust_or_escalate

    record = trust_or_escalate(result)[0]
    assert set(record["by_subset"]) == {"adversarial", "plain"} and record["auroc"]["n"] == 620
    line = _selective_line(record)
    assert line.index("(adversarial, n=300)") < line.index("(plain, n=300)")


def test_the_confidence_figures_take_both_orders_of_every_pair_and_no_draw():
    """A judge whose two orders disagree on some pairs: the guarantee's units draw one order per pair (seeded),
    but AUROC, ECE and overconfidence are over both verdicts of every pair, so the seed's draw does not move
    them; their n counts pairs, and they equal audits/calibration.py on all the verdicts."""
    rng = np.random.default_rng(11)
    rows = []
    for i in range(120):
        label = "1" if i % 2 else "2"
        votes = [label if rng.random() < p else {"1": "2", "2": "1"}[label] for p in (0.9, 0.6, 0.75, 0.7)]
        for (strategy, order), verdict in zip([("A", "1"), ("A", "2"), ("B", "1"), ("B", "2")], votes):
            rows.append(_row("j", strategy, i, order, verdict, label))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": ["synthetic"], "judge": ["j"], "strategy": ["A"]})
    runs = [selective(table, chosen, SelectiveSettings(min_n=10, splits=5),
                      BootstrapSettings(n_boot=300, confidence=0.95, seed=seed)).set_index("metric")
            for seed in (0, 1)]
    every, _ = verdicts(table, "synthetic", "j", "A")
    assert len(every) == 240 and not units(table, "synthetic", "j", "A", 0)[0].equals(
        units(table, "synthetic", "j", "A", 1)[0])  # the two seeds draw other orders
    for metric, f in (("auroc", auroc), ("ece", ece), ("overconfidence", overconfidence)):
        assert runs[0].loc[metric, "estimate"] == runs[1].loc[metric, "estimate"] == pytest.approx(
            f(every.confidence.to_numpy()[None], every.correct.to_numpy(float)[None])[0])
        assert runs[0].loc[metric, "n"] == 120


def test_the_reliability_diagram_is_the_share_right_per_bin_of_confidence(tmp_path):
    """Per bin of confidence: the verdicts in it (both orders), their mean confidence and share right, worked
    out directly; an overconfident judge's points lie below the diagonal, a calibrated one's on it; the table
    passes its suite; the shares' CIs are those of a bootstrap that bins each resample afresh."""
    from judgeaudit.schemas.validate import validate_table

    judges = {"calibrated": lambda c: c, "overconfident": lambda c: c - 0.25}
    rows = [r for k, (name, f) in enumerate(judges.items()) for r in _judge_by_confidence(name, 600, f, k)]
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    chosen = pd.DataFrame({"source": "synthetic", "judge": list(judges), "strategy": "reward_model"})
    bins = reliability(table, chosen, SelectiveSettings(), FAST)
    assert list(bins.columns) == RELIABILITY_COLUMNS and set(bins.judge) == set(judges)
    assert set(bins.bin) == {5, 6, 7, 8, 9}  # confidence ~ U(0.5, 1)
    every, _ = verdicts(table, "synthetic", "overconfident", "reward_model")
    top = every[every.confidence >= 0.9]
    row = bins[(bins.judge == "overconfident") & (bins.bin == 9)].iloc[0]
    assert row.n == len(top) and row.share_right == pytest.approx(top.correct.mean())
    assert row.pairs == top.groupby(PAIR).ngroups and row.ci_method == "bootstrap"
    assert row.mean_confidence == pytest.approx(top.confidence.mean())
    assert bins.groupby("judge").n.sum().eq(1200).all()  # every verdict, both orders, in one bin
    wide = bins.set_index(["judge", "bin"])
    gap = wide.mean_confidence - wide.share_right
    assert (gap["overconfident"] > 0.1).all() and gap["calibrated"].abs().max() < 0.1
    assert (wide.ci_high.loc["overconfident"] < wide.mean_confidence.loc["overconfident"]).sum() >= 4
    validate_table(bins, "reliability", str(tmp_path / "reliability.parquet"), quarantine_dir=tmp_path / "q")
    # the statistics share one binning per input; each equals a statistic that bins on its own
    conf, right = every.confidence.to_numpy(), every.correct.to_numpy(float)
    shared = joint_bootstrap({"confidence": conf, "correct": right}, reliability_statistics(), FAST)
    for b in (5, 9):
        alone = joint_bootstrap({"confidence": conf, "correct": right},
                                {"x": lambda c, b=b: np.array([np.mean(r[(cf >= b / 10) & (cf < (b + 1) / 10)])
                                                               for cf, r in zip(np.atleast_2d(c["confidence"]),
                                                                                np.atleast_2d(c["correct"]))])},
                                FAST)["x"]
        assert (shared[f"bin_{b}"].ci_low, shared[f"bin_{b}"].ci_high) == pytest.approx((alone.ci_low, alone.ci_high))
    # a bin whose verdicts are all right leaves a resample nothing to vary: its CI is the exact one over its pairs
    sure = pd.DataFrame(_judge_by_confidence("sure", 300, lambda c: 1.0 if c >= 0.9 else c, 7), columns=TABLE_COLUMNS)
    top = reliability(sure, chosen.assign(judge="sure"), SelectiveSettings(), FAST).set_index("bin").loc[9]
    pairs = top.n // 2  # a reward model's two orders share their p_1, so both verdicts of a pair share the bin
    exact = stats.binomtest(pairs, pairs).proportion_ci(FAST.confidence, method="exact")
    assert top.share_right == 1.0 and (top.ci_low, top.ci_high) == pytest.approx((exact.low, 1.0))
    assert top.pairs == pairs and top.ci_method == "exact"
    assert top.ci_low == pytest.approx(((1 - FAST.confidence) / 2) ** (1 / pairs)) and top.ci_low < 0.95
    # the diagrams, a panel per judge: a source with fewer judges leaves its other panels blank
    from judgeaudit.report.selective_report import plot_reliability

    other = bins[bins.judge == "calibrated"].assign(source="other")
    kept = selective(table, chosen, SelectiveSettings(splits=10), FAST)
    png = plot_reliability(pd.concat([bins, other]), tmp_path / "reliability.png", kept)
    assert png.stat().st_size > 1000
