"""What the stages write is read back the same, by any reader."""

from __future__ import annotations

import json

import numpy as np


def test_write_json_writes_missing_and_unbounded_numbers_as_null(tmp_path):
    """A summary's NaN (an undefined rate) and a threshold of infinity (escalate every pair)
    come out as null: Python's NaN/Infinity tokens are not JSON, and a browser's JSON.parse
    or DVC Studio rejects the whole file for one of them."""
    from judgeaudit.tables import write_json

    summary = {"rates": [{"over_confidence": float("nan"), "n": 3}, {"over_confidence": 0.25, "n": 4}],
               "threshold": float("inf"), "floor": -np.inf, "gap": np.float64("nan"), "order": ("1", np.nan)}
    text = write_json(summary, tmp_path / "summary.json").read_text()

    def strict(constant: str) -> None:
        raise AssertionError(f"{constant} written")

    assert json.loads(text, parse_constant=strict) == {
        "rates": [{"over_confidence": None, "n": 3}, {"over_confidence": 0.25, "n": 4}],
        "threshold": None, "floor": None, "gap": None, "order": ["1", None]}


def test_json_lines_not_utf8_name_the_file_line_and_byte(tmp_path):
    """Every reader of JSON lines (stage tables and benchmark files) goes through
    ``numbered_jsonl``: bytes that are not UTF-8 name the file, the line and the byte."""
    import pytest

    from judgeaudit.tables import InputError, read_jsonl

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"t.jsonl: line 2: not UTF-8 text \(invalid continuation byte at byte 19\)"):
        read_jsonl(path)
