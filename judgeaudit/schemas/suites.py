"""The data contract of every stage table, as Great Expectations suites: the embedded
pipeline's tables here, the recorded verdicts' and the leaderboard's in recorded_suites.
Every rate is bounded as its table gives it (a share in [0, 1], points in [0, 100]), every
figure finite (null where undefined), every estimate inside its interval where the
interval is drawn around it."""

from __future__ import annotations

import great_expectations as gx
import great_expectations.expectations as gxe

from judgeaudit.config import METHODS, TIERS
from judgeaudit.schemas import recorded_suites as recorded
from judgeaudit.schemas.expectations import applies, between, confidence, finite, inside, rates, referenced, text
from judgeaudit.schemas.expectations import columns as _columns

VERDICTS = ("A", "B", "tie", "unparseable")
ORDERS = ("AB", "BA")


def prompts_suite() -> list:
    return [
        *_columns(["prompt_id", "split", "category", "prompt", "fact"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeUnique(column="prompt_id"),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "eval"]),
        text("prompt"),
    ]


def synthetic_suite() -> list:
    return [
        *_columns(["generator", "prompt_id", "prompt", "category", "answer"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["generator", "prompt_id"]),
        text("answer"),
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


def _metrics(names: tuple[str, ...]) -> list:
    return [*_columns(["metric", "estimate", "ci_low", "ci_high", "n"]),
            gxe.ExpectTableRowCountToBeBetween(min_value=1),
            gxe.ExpectColumnValuesToBeBetween(column="n", min_value=1),
            *names, *confidence(), *inside("estimate")]


def win_rates_suite() -> list:
    """Win rates (shares in [0, 1]) with their CIs."""
    return _metrics(rates("estimate", "ci_low", "ci_high"))


def pls_suite() -> list:
    """PLS and Error Bias, each in [-1, 1] (a relative excess of two win rates; a difference of
    two scores in [0, 1]), with their CIs and, per pair, the two win rates behind a PLS."""
    return _metrics((*between(("estimate", "ci_low", "ci_high"), -1, 1),
                     *rates("wr_ii", "wr_ij", optional=True)))


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
        # the consistencies are means over splits, their CIs over comparisons: not one estimator
        *rates("flip_rate", "cons_orig", "cons_adj", "cons_adj_ci_low", "cons_adj_ci_high"),
        *rates("cons_orig_ci_low", "cons_orig_ci_high", optional=True),
        *finite("cons_orig_std", "cons_adj_std", optional=True),
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
        *between(("estimate", "ci_low", "ci_high"), -1, 1),
        *inside("estimate"),
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
        *rates("p_top", optional=True),
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
        *rates("estimate", "ci_low", "ci_high"),
        *confidence(),
        *inside("estimate"),
        # the length slope is null for the raw rate; its percentile CI is not drawn around it
        *finite("length_slope", "slope_ci_low", "slope_ci_high", optional=True),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["judge", "method", "student_base", "generator_a",
                                                         "generator_b", "control", "condition"]),
    ]


def correlations_suite() -> list:
    # a correlation is nan (undefined) where a method gave every item the same score; its
    # percentile CI is not drawn around it, and the relative improvement divides by |r_base|
    return [
        *_columns(["source", "judge", "score_range", "method", "kind", "n"]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=["spearman", "pearson", "kendall"]),
        *between(("estimate", "ci_low", "ci_high"), -1, 1),
        *between(("improvement", "imp_ci_low", "imp_ci_high"), -2, 2, optional=True),
        *confidence(),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "judge", "score_range", "method", "kind"]),
    ]


SUITES = {"prompts": prompts_suite, "synthetic": synthetic_suite, "responses": responses_suite,
          "judgments": judgments_suite, "win_rates": win_rates_suite, "pls": pls_suite,
          "boat_results": boat_results_suite, "pu_consistency": pu_consistency_suite,
          "prefix_matrices": prefix_matrices_suite, "score_range_scores": score_range_scores_suite,
          "score_correlations": correlations_suite, "controlled_win_rates": controlled_win_rates_suite,
          "judgment_table": recorded.judgment_table_suite, "judge_quality": recorded.judge_quality_suite,
          "judge_comparison": recorded.judge_comparison_suite,
          "strategy_comparison": recorded.strategy_comparison_suite,
          "error_correlation": recorded.error_correlation_suite, "alt_test": recorded.alt_test_suite,
          "selective": recorded.selective_suite, "reliability": recorded.reliability_suite,
          "leaderboard_win_rates": recorded.leaderboard_win_rates_suite,
          "leaderboard_position": recorded.leaderboard_position_suite}


def optional_columns(table: str) -> frozenset[str]:
    """The columns the named table's suite checks only where the table has them."""
    return frozenset(c for e in SUITES[table]() if not applies(e, set()) for c in referenced(e))


def build_suite(table: str, present: frozenset[str] = frozenset()) -> gx.ExpectationSuite:
    """The named table's suite for a table with the optional columns ``present``."""
    suite = gx.ExpectationSuite(name=table)
    for expectation in SUITES[table]():
        if applies(expectation, set(present)):
            suite.add_expectation(expectation)
    return suite
