"""The data contracts of the recorded verdicts' tables (the general judgment table, the
judge report card and its comparisons, the alt-test, selective evaluation) and of a real
leaderboard's, as Great Expectations suites."""

from __future__ import annotations

import great_expectations.expectations as gxe

from judgeaudit.schemas.expectations import between, confidence, finite, inside, rates
from judgeaudit.schemas.expectations import columns as _columns


def judgment_table_suite() -> list:
    """The general judgment table (sources/judgment_table.py): verdicts in the original
    labelling, one per (item, judge, strategy, order)."""
    from judgeaudit.sources import judgment_table as table

    return [
        *_columns(["source", "subset", "item_id", "judge", "strategy", "order", "verdict"]),
        *[gxe.ExpectColumnToExist(column=c) for c in ("prompt", "response_1", "response_2", "model_1", "model_2",
                                                      "p_1", "label", "human_labels", "raw_output")],
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="order", value_set=list(table.ORDERS)),
        gxe.ExpectColumnValuesToBeInSet(column="verdict", value_set=list(table.VERDICTS)),
        gxe.ExpectColumnValuesToBeInSet(column="label", value_set=list(table.LABELS)),  # nulls: no label
        gxe.ExpectColumnValuesToBeBetween(column="p_1", min_value=0.0, max_value=1.0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=[*table.ITEM_KEY, "order"]),
    ]


def judge_quality_suite() -> list:
    """The judge report card: one row per figure, kappa in [-1, 1], the rest in [-0.5, 1]."""
    return [
        *_columns(["source", "subset", "judge", "strategy", "metric", "n"]),
        *[gxe.ExpectColumnToExist(column=c) for c in ("estimate", "ci_low", "ci_high")],
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="metric", value_set=[
            "accuracy", "accuracy_order1", "accuracy_order2", "accuracy_both", "positional_agreement",
            "position_bias", "kappa_label", "kappa_orders", "macro_f1", "macro_precision", "macro_recall",
            "longer_chosen", "kappa_humans", "unparseable_rate"]),
        *between(("estimate", "ci_low", "ci_high"), -1, 1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0),
        *inside("estimate", skip_missing=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "subset", "judge", "strategy", "metric"]),
    ]


def judge_comparison_suite() -> list:
    """Two judges of a source on the same pairs: A the more accurate, the difference inside its
    CI, p-values in [0, 1] with Holm's never below the raw one."""
    return [
        *_columns(["source", "judge_a", "strategy_a", "judge_b", "strategy_b", "n", "accuracy_a", "accuracy_b",
                   "difference", "ci_low", "ci_high", "a_better", "b_better", "p_value", "p_holm", "significant"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="difference", min_value=0, max_value=1),
        *between(("ci_low", "ci_high"), -1, 1),
        *rates("accuracy_a", "accuracy_b", "p_value", "p_holm"),
        *confidence(),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        *inside("difference"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="p_holm", column_B="p_value", or_equal=True),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="accuracy_a", column_B="accuracy_b", or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge_a", "strategy_a", "judge_b",
                                                         "strategy_b"]),
    ]


def strategy_comparison_suite() -> list:
    """Each judge's strategy against its base on the same pairs: the signed difference inside
    its CI, p-values in [0, 1] with Holm's never below the raw one."""
    return [
        *_columns(["source", "judge", "strategy", "base", "n", "accuracy", "accuracy_base", "difference", "ci_low",
                   "ci_high", "better", "worse", "p_value", "p_holm", "significant"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *between(("difference", "ci_low", "ci_high"), -1, 1),
        *rates("accuracy", "accuracy_base", "p_value", "p_holm"),
        *confidence(),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        *inside("difference"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="p_holm", column_B="p_value", or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy"]),
    ]


def error_correlation_suite() -> list:
    """Two judges' errors on the same pairs: rates in [0, 1], the correlation in [-1, 1] inside its CI."""
    return [
        *_columns(["source", "judge_a", "strategy_a", "judge_b", "strategy_b", "n", "units", "error_a", "error_b",
                   "both_wrong", "expected_both", "correlation", "ci_low", "ci_high"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *rates("error_a", "error_b", "both_wrong", "expected_both"),
        *between(("correlation", "ci_low", "ci_high"), -1, 1),
        *confidence(),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="units", column_B="n", or_equal=True),
        *inside("correlation"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge_a", "strategy_a", "judge_b",
                                                         "strategy_b"]),
    ]


def alt_test_suite() -> list:
    """The alt-test, a row per (judge, left-out annotator): shares and probabilities in [0, 1], the
    margin in [-1, 1], the advantage probability inside its CI, a pass where half the annotators lose."""
    return [
        *_columns(["source", "judge", "strategy", "order", "annotator", "n", "judge_advantage",
                   "annotator_advantage", "margin", "p_value", "p_by", "wins", "epsilon", "q", "annotators",
                   "winning_rate", "passed", "advantage_prob", "ci_low", "ci_high"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *rates("judge_advantage", "annotator_advantage", "p_value", "p_by", "epsilon", "q", "winning_rate",
               "advantage_prob", "ci_low", "ci_high"),
        *finite("epsilon_to_pass", optional=True),
        *confidence(),
        gxe.ExpectColumnValuesToBeBetween(column="margin", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectColumnValuesToBeBetween(column="annotators", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="wins", value_set=[True, False]),
        gxe.ExpectColumnValuesToBeInSet(column="passed", value_set=[True, False]),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="p_by", column_B="p_value", or_equal=True),
        *inside("advantage_prob"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy", "order", "annotator"]),
    ]


_ESTIMATES = ("estimate", "ci_low", "ci_high")


def selective_suite() -> list:
    """Selective evaluation, a row per (judge, subset, metric): rates in [0, 1] inside their CIs (nan where a
    judge keeps no pair), overconfidence (a difference of two rates) in [-1, 1], the seven metrics of each judge
    over all its pairs, only the confidence's three per subset, a threshold that is a confidence or inf
    (escalate all)."""
    return [
        *_columns(["source", "judge", "strategy", "subset", "confidence", "alpha", "delta", "threshold", "metric",
                   "n"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=7),
        gxe.ExpectColumnValuesToBeInSet(column="metric", value_set=["coverage", "selective_accuracy", "accuracy",
                                                                    "auroc", "ece", "overconfidence",
                                                                    "target_reached"]),
        gxe.ExpectColumnValuesToBeInSet(column="metric", value_set=["auroc", "ece", "overconfidence"],
                                        condition_parser="pandas", row_condition='subset!="all"'),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1, condition_parser="pandas",
                                            row_condition='metric!="overconfidence"') for c in _ESTIMATES],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=-1, max_value=1, condition_parser="pandas",
                                            row_condition='metric=="overconfidence"') for c in _ESTIMATES],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1) for c in ("alpha", "delta")],
        gxe.ExpectColumnValuesToBeBetween(column="threshold", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0),
        *inside("estimate", skip_missing=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy", "subset", "metric"]),
    ]


def reliability_suite() -> list:
    """The reliability diagram behind each ECE: a row per (judge, bin) with verdicts in it, the bin one of
    ten equal-width bins of [0, 1], its mean confidence inside it, the share right in [0, 1] inside its CI;
    the CI's pairs (each one or two of the bin's verdicts) and its method."""
    return [
        *_columns(["source", "judge", "strategy", "confidence", "bin", "bin_low", "bin_high", "n", "pairs",
                   "mean_confidence", "share_right", "ci_low", "ci_high", "ci_method"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="bin", min_value=0, max_value=9),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=1),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="n", column_B="pairs", or_equal=True),
        gxe.ExpectColumnValuesToBeBetween(column="pairs", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="ci_method", value_set=["bootstrap", "exact"]),
        *rates("bin_low", "bin_high", "mean_confidence", "share_right", "ci_low", "ci_high"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="mean_confidence", column_B="bin_low", or_equal=True),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bin_high", column_B="mean_confidence", or_equal=True),
        *inside("share_right"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy", "bin"]),
    ]


def leaderboard_win_rates_suite() -> list:
    """One row per leaderboard model: rates and their standard errors in percent, the raw rate's
    CI too (a percentile CI of the instructions' resampled mean), Bradley-Terry score inside its CI,
    the controlled rates' fitted weights finite (null where a model has none)."""
    return [
        *_columns(["model", "baseline", "judge", "n", "win_rate", "win_rate_se", "lc_win_rate", "sc_win_rate",
                   "bt_score", "bt_ci_low", "bt_ci_high", "flagged"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeUnique(column="model"),
        *rates("win_rate", "lc_win_rate", "sc_win_rate", "win_rate_se", percent=True),
        *rates("lc_se", "sc_se", "discrete_win_rate", "win_rate_ci_low", "win_rate_ci_high", percent=True,
               optional=True),
        *finite("bt_score", "bt_ci_low", "bt_ci_high"),
        *finite(*(f"lc_w_{w}" for w in ("length", "difficulty", "model")), optional=True),
        *finite(*(f"sc_w_{w}" for w in ("length", "header", "bold", "list", "difficulty", "model")), optional=True),
        *inside("bt_score", "bt_ci_low", "bt_ci_high"),
        gxe.ExpectColumnValuesToBeInSet(column="flagged", value_set=[True, False]),
    ]


def leaderboard_position_suite() -> list:
    """The judge's position bias, a row per (judge, model) and a pooled one: win rates in points
    on each half of the instructions, their difference inside its CI, a p-value."""
    return [
        *_columns(["judge", "baseline", "model", "n", "n_instructions", "n_first", "n_second", "win_rate_first",
                   "win_rate_second", "difference", "ci_low", "ci_high", "p_randomization", "confidence"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *rates("win_rate_first", "win_rate_second", percent=True),
        *between(("difference", "ci_low", "ci_high"), -100, 100),
        *confidence(),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=1) for c in ("n_first", "n_second")],
        gxe.ExpectColumnValuesToBeBetween(column="p_randomization", min_value=0, max_value=1),
        *inside("difference"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["judge", "baseline", "model"]),
    ]
