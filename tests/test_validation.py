"""Great Expectations suites: a corrupt judgments table is rejected with a message
naming the table, the expectation and example rows; bad rows are quarantined."""

from __future__ import annotations

import pandas as pd
import pytest

from judgeaudit.schemas.validate import TableValidationError, validate_table


def _judgments(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame([dict(judge="J", tier="same", mode="likelihood", method="sft",
                              student_base="s", prompt_id=f"e{k // 2}", student_a="a", student_b="b",
                              generator_a="ga", generator_b="gb", order="AB" if k % 2 == 0 else "BA",
                              verdict="A", p_a=0.7) for k in range(n)])


def test_valid_judgments_pass(tmp_path):
    frame = _judgments()
    assert validate_table(frame, "judgments", quarantine_dir=tmp_path).equals(frame)
    assert not list(tmp_path.iterdir())


def test_corrupt_judgments_rejected_and_quarantined(tmp_path):
    frame = _judgments(6)
    frame.loc[1, "verdict"] = "maybe"
    frame.loc[4, "p_a"] = 1.5
    with pytest.raises(TableValidationError) as err:
        validate_table(frame, "judgments", source="judge stage", quarantine_dir=tmp_path)
    msg = str(err.value)
    assert "table judgments (judge stage) failed validation" in msg
    assert "expect_column_values_to_be_in_set" in msg and "'maybe'" in msg
    assert "expect_column_values_to_be_between" in msg
    (path,) = tmp_path.glob("judgments--judge_stage--*.parquet")
    quarantined = pd.read_parquet(path)
    assert sorted(quarantined["verdict"].tolist()) == ["A", "maybe"]
    assert len(quarantined) == 2 and "failed_expectations" in quarantined


def test_a_passing_table_then_a_failing_one_in_one_process(tmp_path):
    """The suite is built once per process and a pass is checked for pass or fail alone: the
    same table failing after it still gets the full result, its rows listed and quarantined."""
    validate_table(_judgments(), "judgments", quarantine_dir=tmp_path)
    frame = _judgments()
    frame.loc[3, "verdict"] = "maybe"
    with pytest.raises(TableValidationError, match="1 row\\(s\\), e.g.") as err:
        validate_table(frame, "judgments", quarantine_dir=tmp_path)
    assert "'maybe'" in str(err.value)
    (path,) = tmp_path.glob("judgments--*.parquet")
    assert pd.read_parquet(path)["verdict"].tolist() == ["maybe"]
    assert validate_table(_judgments(), "judgments", quarantine_dir=tmp_path).equals(_judgments())


def test_missing_column_and_duplicates_rejected(tmp_path):
    frame = pd.concat([_judgments(2), _judgments(2)], ignore_index=True).drop(columns="mode")
    with pytest.raises(TableValidationError) as err:
        validate_table(frame, "judgments", quarantine_dir=tmp_path)
    assert "expect_column_to_exist({'column': 'mode'})" in str(err.value)
    assert "expect_compound_columns_to_be_unique" in str(err.value)


def test_metrics_ci_order_checked(tmp_path):
    frame = pd.DataFrame({"metric": ["pls"], "estimate": [0.2], "ci_low": [0.3], "ci_high": [0.1],
                          "n": [10]})
    with pytest.raises(TableValidationError, match="pair_values_a_to_be_greater_than_b"):
        validate_table(frame, "pls", quarantine_dir=tmp_path)


def test_verdicts_that_contradict_their_p_a_are_rejected(tmp_path):
    """Drill: verdict A with P(A wins) = 0.2 (a swapped column, a sign error) fails the contract."""
    frame = _judgments(4)
    frame.loc[2, "p_a"] = 0.2
    frame.loc[3, ["verdict", "p_a"]] = ["B", 0.9]
    with pytest.raises(TableValidationError) as err:
        validate_table(frame, "judgments", source="judge", quarantine_dir=tmp_path)
    assert "verdict==\"A\"" in str(err.value) and "verdict==\"B\"" in str(err.value)
    (quarantined,) = tmp_path.glob("judgments--judge--*.parquet")
    assert len(pd.read_parquet(quarantined)) == 2


def test_each_failure_keeps_its_own_quarantine_file(tmp_path):
    """Drill: two failed runs leave two quarantine files (the first is not overwritten)."""
    frame = _judgments(2)
    frame.loc[0, "verdict"] = "maybe"
    for _ in range(2):
        with pytest.raises(TableValidationError):
            validate_table(frame, "judgments", source="data/judgments/judgments.parquet",
                           quarantine_dir=tmp_path / "quarantine")
    files = sorted((tmp_path / "quarantine").glob("judgments--judgments--*.parquet"))
    assert len(files) == 2 and all(len(pd.read_parquet(f)) == 1 for f in files)
