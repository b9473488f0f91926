"""The expectations the suites are built from: required columns, bounded rates, finite
figures and estimates inside their intervals. A figure that is undefined is null (NaN),
never an infinity: Great Expectations skips nulls in a column's value checks, so each
check here allows null where the column is not required to be set, and refuses an
infinity (outside any bound, and outside ``_finite``'s set)."""

from __future__ import annotations

import great_expectations.expectations as gxe

OPTIONAL = "optional_column"  # meta key: the expectation applies only where the table has the column


def columns(names: list[str]) -> list:
    """Each column exists and is never null."""
    return [e for c in names for e in (gxe.ExpectColumnToExist(column=c),
                                       gxe.ExpectColumnValuesToNotBeNull(column=c))]


def text(column: str, min_length: int = 1) -> gxe.Expectation:
    return gxe.ExpectColumnValueLengthsToBeBetween(column=column, min_value=min_length)


def between(names: tuple[str, ...] | list[str], low: float, high: float, *, optional: bool = False,
            **kw) -> list:
    """Each of ``names`` in [low, high] where set (so finite); ``optional``: only where the table
    has the column (a table some stages write without it)."""
    meta = {OPTIONAL: True} if optional else None
    return [gxe.ExpectColumnValuesToBeBetween(column=c, min_value=low, max_value=high, meta=meta, **kw)
            for c in names]


def rates(*names: str, percent: bool = False, optional: bool = False) -> list:
    """Shares, probabilities and win rates: in [0, 1], or [0, 100] where the table gives points."""
    return between(names, 0, 100 if percent else 1, optional=optional)


def finite(*names: str, optional: bool = False) -> list:
    """An unbounded figure (a slope, a score, a log-odds weight) is a number or null, never an infinity."""
    meta = {OPTIONAL: True} if optional else None
    return [gxe.ExpectColumnValuesToNotBeInSet(column=c, value_set=[float("inf"), float("-inf")], meta=meta)
            for c in names]


def confidence(optional: bool = True) -> list:
    """The confidence level of a table's intervals: strictly between 0 and 1."""
    return between(("confidence",), 0, 1, optional=optional, strict_min=True, strict_max=True)


def inside(column: str, low: str = "ci_low", high: str = "ci_high", *, skip_missing: bool = False,
           optional: bool = False) -> list:
    """``low`` <= ``column`` <= ``high`` (``skip_missing``: rows where either is null pass)."""
    kw = {"ignore_row_if": "either_value_is_missing"} if skip_missing else {}
    meta = {OPTIONAL: True} if optional else None
    return [gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A=high, column_B=column, or_equal=True, meta=meta,
                                                        **kw),
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A=column, column_B=low, or_equal=True, meta=meta,
                                                        **kw)]


def referenced(expectation: gxe.Expectation) -> set[str]:
    """The columns an expectation reads."""
    return {c for key in ("column", "column_A", "column_B") if (c := getattr(expectation, key, None))} | set(
        getattr(expectation, "column_list", None) or ())


def applies(expectation: gxe.Expectation, present: set[str]) -> bool:
    """Whether ``expectation`` is part of the suite for a table with the columns ``present``."""
    return not (expectation.meta or {}).get(OPTIONAL) or referenced(expectation) <= present
