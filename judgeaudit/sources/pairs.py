"""Plain labelled pairs to judge, with no recorded verdict: a team's own gold set, as JSONL,
CSV or Parquet (one file, or a folder of them). ``audit-judge --data pairs=PATH``.

One row per pair. Required: ``prompt`` and either ``response_1``, ``response_2`` and
``label`` ("1", "2" or "tie": the better response), or ``chosen`` and ``rejected``
(RewardBench's and TRL's preference format: response 1 is the chosen one, so label "1";
both presentation orders are judged, so which is stored first does not matter).
Optional: ``item_id`` (default: the row's number in its file), ``source`` (default: the
file name), ``subset`` ("all"), ``model_1``, ``model_2``. A pair given twice (one
source, subset and item_id) is an error naming both rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit.sources.generic import SUFFIXES
from judgeaudit.sources.judgment_table import ReadReport
from judgeaudit.sources.text_input import read_verdict_table
from judgeaudit.tables import InputError

SOURCE = "pairs"
LABELS = {"1": "1", "2": "2", "tie": "tie", "0": "tie", "1.0": "1", "2.0": "2", "0.0": "tie"}
ITEM = ["source", "subset", "item_id", "prompt", "response_1", "response_2", "model_1", "model_2", "label",
        "human_labels"]


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError(f"{root}: no such file or folder of pairs")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())
    if not files:
        raise InputError(f"{root}: no .jsonl, .csv or .parquet file of pairs")
    return files


def _given(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)  # NaN: a CSV's empty cell


def _columns(frame: pd.DataFrame, path: Path) -> tuple[str, str, str | None]:
    """(first response's column, second's, the label's or None for chosen/rejected)."""
    if {"response_1", "response_2"} <= set(frame.columns):
        if "label" not in frame.columns:
            raise InputError(f"{path}: missing column 'label' (1, 2 or tie: the better response) beside "
                             f"response_1 and response_2; found {list(frame.columns)}")
        return "response_1", "response_2", "label"
    if {"chosen", "rejected"} <= set(frame.columns):
        return "chosen", "rejected", None
    raise InputError(f"{path}: give columns response_1, response_2 and label, or chosen and rejected; "
                     f"found {list(frame.columns)}")


def _row(rec: dict, path: Path, k: int, first: str, second: str, label_col: str | None) -> dict:
    for field in ("prompt", first, second):
        if not _given(rec.get(field)) or not str(rec[field]).strip():
            raise InputError(f"{path}: row {k}: field {field!r} is empty")
    label = "1"
    if label_col is not None:
        raw = rec.get(label_col)
        label = LABELS.get(str(raw).strip().lower()) if _given(raw) else None
        if label is None:
            raise InputError(f"{path}: row {k}: field 'label' must be 1, 2 or tie, got {raw!r}")
    text = {c: str(rec[c]) if _given(rec.get(c)) else None for c in ("source", "subset", "item_id", "model_1",
                                                                       "model_2")}
    return {"source": text["source"] or path.stem, "subset": text["subset"] or "all",
            "item_id": text["item_id"] or str(k), "prompt": str(rec["prompt"]),
            "response_1": str(rec[first]), "response_2": str(rec[second]),
            "model_1": text["model_1"], "model_2": text["model_2"], "label": label, "human_labels": None}


def read_pairs(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """The pairs at ``root`` (``ITEM`` columns, in file and row order) and what was read."""
    report = ReadReport(SOURCE)
    rows: list[dict] = []
    where: dict[tuple[str, str, str], tuple[Path, int]] = {}
    for path in _files(Path(root)):
        file = report.file(path)
        raw = read_verdict_table(path, ("prompt",))
        first, second, label_col = _columns(raw, path)
        for k, rec in enumerate(raw.to_dict("records"), start=1):
            row = _row(rec, path, k, first, second, label_col)
            key = (row["source"], row["subset"], row["item_id"])
            if key in where:
                seen, at = where[key]
                both = f"rows {at} and {k}" if seen == path else f"row {at} and {path}: row {k}"
                raise InputError(f"{seen}: {both} give the pair {list(key)} twice "
                                 "(source, subset, item_id)")
            where[key] = (path, k)
            rows.append(row)
            file.rows_read += 1
    return pd.DataFrame(rows, columns=ITEM), report
