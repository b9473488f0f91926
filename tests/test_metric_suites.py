"""Drills: the metric tables' suites refuse impossible values. Each case corrupts one cell of
an excerpt of the committed audit tables (tests/data/tables: rows of data/metrics/) and
runs `judgeaudit validate` on it: a rate outside [0, 1], an infinite figure, an estimate
outside its interval or a confidence level of 2 is refused with a message naming the
table, the column and the row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from flows.cli import main
from judgeaudit.schemas.validate import TableValidationError, validate_table
from judgeaudit.tables import read_table, write_table

TABLES = Path(__file__).resolve().parent / "data" / "tables"
INF = float("inf")


def _validate(tmp_path: Path, table: str, frame: pd.DataFrame, capsys) -> tuple[int, str]:
    path = write_table(frame, tmp_path / f"{table}.parquet")
    code = main(["validate", table, str(path), "--quarantine", str(tmp_path / "quarantine")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("table", ["win_rates", "pls"])
def test_the_committed_tables_pass(tmp_path, capsys, table):
    code, err = _validate(tmp_path, table, read_table(TABLES / f"{table}.jsonl"), capsys)
    assert code == 0, err


@pytest.mark.parametrize("table,row,column,value,check", [
    ("win_rates", 2, "estimate", 1.7, "between"),
    ("win_rates", 2, "ci_high", 1.2, "between"),
    ("win_rates", 4, "confidence", 2.0, "between"),
    ("win_rates", 1, "estimate", INF, "between"),
    ("win_rates", 0, "ci_low", 0.2, "greater_than_b"),  # above its estimate: outside the interval
    ("pls", 1, "estimate", INF, "between"),
    ("pls", 0, "ci_low", -INF, "between"),
    ("pls", 2, "wr_ii", 3.0, "between"),
    ("pls", 3, "estimate", 1.5, "between"),
    ("pls", 4, "estimate", 0.9, "greater_than_b"),
])
def test_an_impossible_value_is_refused_naming_table_column_and_row(tmp_path, capsys, table, row, column,
                                                                     value, check):
    frame = read_table(TABLES / f"{table}.jsonl")
    frame.loc[row, column] = value
    code, err = _validate(tmp_path, table, frame, capsys)
    assert code == 2, err
    assert f"table {table} (" in err and "failed validation" in err
    assert f"'{column}'" in err and check in err
    assert f"row {row + 1}" in err  # counted from 1, as the readers count rows
    assert "Traceback" not in err


def test_undefined_figures_are_null_not_infinite(tmp_path):
    """A pooled PLS row has no pair win rates: null passes, an infinity does not."""
    frame = read_table(TABLES / "pls.jsonl")
    assert frame["wr_ii"].isna().any()
    validate_table(frame, "pls", quarantine_dir=tmp_path)
    frame.loc[frame["wr_ii"].isna().idxmax(), "wr_ii"] = INF
    with pytest.raises(TableValidationError, match="wr_ii"):
        validate_table(frame, "pls", quarantine_dir=tmp_path)


def test_a_pls_table_without_the_optional_columns_is_still_bounded(tmp_path):
    """The robustness stage's PLS tables have neither the pair win rates nor a confidence
    column: they pass, and their estimates are still bounded."""
    frame = read_table(TABLES / "pls.jsonl").drop(columns=["wr_ii", "wr_ij", "confidence"])
    validate_table(frame, "pls", quarantine_dir=tmp_path)
    frame.loc[0, "ci_high"] = 1.4
    with pytest.raises(TableValidationError, match="'ci_high'"):
        validate_table(frame, "pls", quarantine_dir=tmp_path)
