"""The data contract of every stage table, as Great Expectations suites."""

from __future__ import annotations

import great_expectations as gx
import great_expectations.expectations as gxe

from judgeaudit.config import METHODS, TIERS

VERDICTS = ("A", "B", "tie", "unparseable")
ORDERS = ("AB", "BA")


def _columns(names: list[str]) -> list:
    """Each column exists and is never null."""
    return [e for c in names for e in (gxe.ExpectColumnToExist(column=c),
                                       gxe.ExpectColumnValuesToNotBeNull(column=c))]


def _inside_ci(column: str, skip_missing: bool = False) -> list:
    """ci_low <= ``column`` <= ci_high (``skip_missing``: rows where either is null pass)."""
    kw = {"ignore_row_if": "either_value_is_missing"} if skip_missing else {}
    return [gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B=column, or_equal=True, **kw),
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A=column, column_B="ci_low", or_equal=True, **kw)]


def _text(column: str, min_length: int = 1) -> gxe.Expectation:
    return gxe.ExpectColumnValueLengthsToBeBetween(column=column, min_value=min_length)


def prompts_suite() -> list:
    return [
        *_columns(["prompt_id", "split", "category", "prompt", "fact"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeUnique(column="prompt_id"),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "eval"]),
        _text("prompt"),
    ]


def synthetic_suite() -> list:
    return [
        *_columns(["generator", "prompt_id", "prompt", "category", "answer"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["generator", "prompt_id"]),
        _text("answer"),
    ]


def responses_suite() -> list:
    return [
        *_columns(["student_id", "student_base", "generator", "method", "prompt_id", "prompt",
                   "response"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="method", value_set=list(METHODS)),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["student_id", "prompt_id"]),
    ]


def judgments_suite() -> list:
    return [
        *_columns(["judge", "tier", "mode", "method", "student_base", "prompt_id", "student_a",
                   "student_b", "generator_a", "generator_b", "order", "verdict", "p_a"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="tier", value_set=[*TIERS, "unrelated"]),
        gxe.ExpectColumnValuesToBeInSet(column="order", value_set=list(ORDERS)),
        gxe.ExpectColumnValuesToBeInSet(column="verdict", value_set=list(VERDICTS)),
        gxe.ExpectColumnValuesToBeBetween(column="p_a", min_value=0.0, max_value=1.0),
        *_verdict_agrees_with_p_a(),
        gxe.ExpectCompoundColumnsToBeUnique(
            column_list=["judge", "method", "student_base", "generator_a", "generator_b",
                         "prompt_id", "order"]),
    ]


def _verdict_agrees_with_p_a() -> list:
    """A verdict A means P(A wins) above one half, B below it: a table whose verdicts
    contradict their own probabilities (a swapped column, a sign error) is rejected."""
    return [gxe.ExpectColumnValuesToBeBetween(column="p_a", row_condition=f'verdict=="{v}"',
                                              condition_parser="pandas", **bounds)
            for v, bounds in (("A", dict(min_value=0.5, strict_min=True)),
                              ("B", dict(max_value=0.5, strict_max=True)))]


def metrics_suite() -> list:
    return [
        *_columns(["metric", "estimate", "ci_low", "ci_high", "n"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=1),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="ci_low",
                                                    or_equal=True),
    ]


def boat_results_suite() -> list:
    return [
        *_columns(["benchmark", "model", "run", "item", "bag", "vanilla_correct", "boat_correct"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="vanilla_correct", value_set=[True, False]),
        gxe.ExpectColumnValuesToBeInSet(column="boat_correct", value_set=[True, False]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["benchmark", "model", "run", "item"]),
    ]


def pu_consistency_suite() -> list:
    return [
        *_columns(["judge", "condition", "qtype", "n_pairs", "cons_orig", "cons_adj", "flip_rate"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="cons_orig", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="cons_adj", min_value=0, max_value=1),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="cons_adj_ci_high", column_B="cons_adj_ci_low",
                                                    or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["judge", "condition", "qtype"]),
    ]


def prefix_matrices_suite() -> list:
    return [
        *_columns(["source", "base", "variant", "trained_group", "group", "kind", "estimate", "ci_low", "ci_high",
                   "n"]),
        gxe.ExpectColumnToExist(column="p1"),
        gxe.ExpectColumnToExist(column="p2"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=["omega", "alpha"]),
        gxe.ExpectColumnValuesToBeBetween(column="estimate", min_value=-1, max_value=1),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="ci_low", or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "base", "variant", "trained_group", "group", "kind",
                                                         "p1", "p2"]),
    ]


def score_range_scores_suite() -> list:
    return [
        *_columns(["source", "item_id", "judge", "assistant", "score_range", "low", "high", "reference",
                   "split", "greedy", "expected", "cd_greedy", "cd_expected", "assistant_greedy"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["dev", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="reference", min_value=0, max_value=9),
        *[e for m in ("greedy", "expected", "cd_greedy", "cd_expected", "assistant_greedy") for e in (
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A=m, column_B="low", or_equal=True),
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="high", column_B=m, or_equal=True))],
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "assistant", "score_range", "item_id"]),
    ]


def controlled_win_rates_suite() -> list:
    return [
        *_columns(["judge", "method", "student_base", "generator_a", "generator_b", "control", "condition",
                   "estimate", "ci_low", "ci_high", "n"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="control", value_set=["raw", "length", "length+style"]),
        gxe.ExpectColumnValuesToBeBetween(column="estimate", min_value=0, max_value=1),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="ci_low", or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["judge", "method", "student_base", "generator_a",
                                                         "generator_b", "control", "condition"]),
    ]


def correlations_suite() -> list:
    # a correlation is nan (undefined) where a method gave every item the same score
    return [
        *_columns(["source", "judge", "score_range", "method", "kind", "n"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=["spearman", "pearson", "kendall"]),
        gxe.ExpectColumnValuesToBeBetween(column="estimate", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "score_range", "method", "kind"]),
    ]


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
        gxe.ExpectColumnValuesToBeBetween(column="estimate", min_value=-1.0, max_value=1.0),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0),
        *_inside_ci("estimate", skip_missing=True),
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
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("accuracy_a", "accuracy_b", "p_value", "p_holm")],
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        *_inside_ci("difference"),
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
        gxe.ExpectColumnValuesToBeBetween(column="difference", min_value=-1, max_value=1),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("accuracy", "accuracy_base", "p_value", "p_holm")],
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        *_inside_ci("difference"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="p_holm", column_B="p_value", or_equal=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy"]),
    ]


def error_correlation_suite() -> list:
    """Two judges' errors on the same pairs: rates in [0, 1], the correlation in [-1, 1] inside its CI."""
    return [
        *_columns(["source", "judge_a", "strategy_a", "judge_b", "strategy_b", "n", "units", "error_a", "error_b",
                   "both_wrong", "expected_both", "correlation", "ci_low", "ci_high"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("error_a", "error_b", "both_wrong", "expected_both")],
        gxe.ExpectColumnValuesToBeBetween(column="correlation", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="units", column_B="n", or_equal=True),
        *_inside_ci("correlation"),
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
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("judge_advantage", "annotator_advantage", "p_value", "p_by", "epsilon", "q", "winning_rate",
                    "advantage_prob", "ci_low", "ci_high")],
        gxe.ExpectColumnValuesToBeBetween(column="margin", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectColumnValuesToBeBetween(column="annotators", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="wins", value_set=[True, False]),
        gxe.ExpectColumnValuesToBeInSet(column="passed", value_set=[True, False]),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="p_by", column_B="p_value", or_equal=True),
        *_inside_ci("advantage_prob"),
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
        *_inside_ci("estimate", skip_missing=True),
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
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("bin_low", "bin_high", "mean_confidence", "share_right", "ci_low", "ci_high")],
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="mean_confidence", column_B="bin_low", or_equal=True),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bin_high", column_B="mean_confidence", or_equal=True),
        *_inside_ci("share_right"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "strategy", "bin"]),
    ]


def leaderboard_win_rates_suite() -> list:
    """One row per leaderboard model: rates in percent, Bradley-Terry score inside its CI."""
    return [
        *_columns(["model", "baseline", "judge", "n", "win_rate", "win_rate_se", "lc_win_rate", "sc_win_rate",
                   "bt_score", "bt_ci_low", "bt_ci_high", "flagged"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeUnique(column="model"),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=100)
          for c in ("win_rate", "lc_win_rate", "sc_win_rate")],
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bt_score", column_B="bt_ci_low", or_equal=True),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bt_ci_high", column_B="bt_score", or_equal=True),
        gxe.ExpectColumnValuesToBeInSet(column="flagged", value_set=[True, False]),
    ]


def leaderboard_position_suite() -> list:
    """The judge's position bias, a row per (judge, model) and a pooled one: win rates in points
    on each half of the instructions, their difference inside its CI, a p-value."""
    return [
        *_columns(["judge", "baseline", "model", "n", "n_instructions", "n_first", "n_second", "win_rate_first",
                   "win_rate_second", "difference", "ci_low", "ci_high", "p_randomization", "confidence"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=100)
          for c in ("win_rate_first", "win_rate_second")],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=-100, max_value=100)
          for c in ("difference", "ci_low", "ci_high")],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=1) for c in ("n_first", "n_second")],
        gxe.ExpectColumnValuesToBeBetween(column="p_randomization", min_value=0, max_value=1),
        *_inside_ci("difference"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["judge", "baseline", "model"]),
    ]


SUITES = {"prompts": prompts_suite, "synthetic": synthetic_suite, "responses": responses_suite,
          "judgments": judgments_suite, "win_rates": metrics_suite, "pls": metrics_suite,
          "boat_results": boat_results_suite, "pu_consistency": pu_consistency_suite,
          "prefix_matrices": prefix_matrices_suite, "score_range_scores": score_range_scores_suite,
          "score_correlations": correlations_suite, "controlled_win_rates": controlled_win_rates_suite,
          "judgment_table": judgment_table_suite, "judge_quality": judge_quality_suite,
          "judge_comparison": judge_comparison_suite, "strategy_comparison": strategy_comparison_suite,
          "error_correlation": error_correlation_suite, "alt_test": alt_test_suite,
          "selective": selective_suite, "reliability": reliability_suite,
          "leaderboard_win_rates": leaderboard_win_rates_suite, "leaderboard_position": leaderboard_position_suite}


def build_suite(table: str) -> gx.ExpectationSuite:
    """The named table's suite."""
    suite = gx.ExpectationSuite(name=table)
    for expectation in SUITES[table]():
        suite.add_expectation(expectation)
    return suite
