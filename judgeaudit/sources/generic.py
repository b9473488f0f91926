"""Verdicts from any harness, as JSONL, CSV or Parquet (one file, or a folder of them).

One row per verdict. Required columns: ``item_id``, ``judge``, ``verdict``: "1" or "2",
the response that won in the item's own labelling whichever was shown first; or as judges
and their harnesses write it, by position (MT-Bench's "[[A]]" / "[[B]]" / "[[C]]",
Arena-Hard's "[[A>>B]]" ... "[[B>>A]]", JudgeBench's "A>B" / "B>A" / "A=B", Chatbot
Arena's "model_a" / "model_b" / "tie (bothbad)", a bare "A" or "B"), where A is the
response shown first (``order``) and B the other; "tie", "0" or "A=B" for a tie.
Anything else is counted as unparseable, its value kept in raw_output.
Optional: ``source`` (default: the file name), ``subset`` ("all"), ``strategy``
("default"), ``order`` (the response shown first, "1" or "2"; default "1"), ``prompt``,
``response_1``, ``response_2``, ``model_1``, ``model_2``, ``p_1`` (probability that
response 1 wins, in [0, 1]), ``label`` ("1", "2", "tie"), ``human_labels`` (a list in
JSONL, or labels joined by "|" in CSV), ``raw_output``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.sources.judgment_table import COLUMNS, ReadReport, make_table
from judgeaudit.sources.repeats import copies_note, first_difference, same
from judgeaudit.sources.text_input import read_verdict_table
from judgeaudit.tables import InputError

SOURCE = "generic"
REQUIRED = ("item_id", "judge", "verdict")
VERDICT_KEY = ("source", "subset", "item_id", "judge", "strategy", "order")  # one verdict each
ITEM_FIELDS = ("prompt", "response_1", "response_2", "model_1", "model_2", "label", "human_labels")  # one value each
REPEATED = "duplicated verdict: an exact copy of an earlier row (first kept)"
SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
_VERDICT = {"1": "1", "2": "2", "tie": "tie", "0": "tie", "unparseable": "unparseable",
            "tie (bothbad)": "tie", "tie(bothbad)": "tie"}  # Chatbot Arena's
_LABEL = {"1": "1", "2": "2", "tie": "tie", "0": "tie"}
# by position: "A" is the response shown first, whichever of the item's two it was
_SHOWN = re.compile(r"(?:model_)?(?P<won>[ab])|(?P<x>[ab])\s*(?P<op>>>|>|<<|<|=)\s*(?P<y>[ab])|(?P<c>c)")


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


def _verdict(value: object, order: str) -> str:
    """The winner in the item's labelling ("1", "2", "tie", or "unparseable"); ``order``:
    the response shown first."""
    text = _text(value)
    if text in _VERDICT:
        return _VERDICT[text]
    bracketed = text.startswith("[[") and text.endswith("]]")
    m = _SHOWN.fullmatch(text[2:-2].strip() if bracketed else text)
    if m is None or (m["c"] and not bracketed) or (m["x"] and m["x"] == m["y"]):
        return "unparseable"
    if m["c"] or m["op"] == "=":
        return "tie"
    first = m["won"] == "a" if m["won"] else (m["x"] == "a") == m["op"].startswith(">")
    return order if first else {"1": "2", "2": "1"}[order]


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise InputError(f"{root}: no such file or folder")
    files = sorted(p for p in root.iterdir() if p.suffix.lower() in SUFFIXES)
    if not files:
        raise InputError(f"{root}: no verdict file ({', '.join(SUFFIXES)})")
    return files


def _human_labels(value: object, path: Path, row: int) -> list[str] | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else str(value).split("|")
    labels = [_LABEL.get(_text(v)) for v in values]
    if None in labels:
        raise InputError(f"{path}: row {row}: field 'human_labels' holds {value!r}; each must be 1, 2 or tie")
    return labels


def _p_1(value: object, path: Path, row: int) -> float | None:
    """The probability that response 1 wins, None where the row gives none."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        if isinstance(value, bool):  # JSON true is no probability, though Python reads it as 1
            raise ValueError
        p = float(value)
    except (TypeError, ValueError):
        p = None
    if p is None or not (np.isnan(p) or 0.0 <= p <= 1.0):
        raise InputError(f"{path}: row {row}: field 'p_1' must be a probability in [0, 1], got {value!r}")
    return None if np.isnan(p) else p


def _row(rec: dict, path: Path, k: int) -> dict:
    """One verdict row of the judgment table from row ``k`` of ``path``."""
    order = _text(rec.get("order", "1")) if rec.get("order") is not None else "1"
    if order not in ("1", "2"):
        raise InputError(f"{path}: row {k}: field 'order' must be 1 or 2 (the response shown first), "
                         f"got {rec.get('order')!r}")
    verdict = _verdict(rec["verdict"], order)
    label = rec.get("label")
    if label is not None and not (isinstance(label, float) and np.isnan(label)):
        if _text(label) not in _LABEL:
            raise InputError(f"{path}: row {k}: field 'label' must be 1, 2 or tie, got {label!r}")
        label = _LABEL[_text(label)]
    else:
        label = None
    given = {c: rec.get(c) if _given(rec.get(c)) else None for c in COLUMNS}  # a CSV's empty cell: NaN
    return {**given, "source": given["source"] or path.stem, "subset": given["subset"] or "all",
            "item_id": str(rec["item_id"]), "strategy": given["strategy"] or "default", "order": order,
            "verdict": verdict, "label": label, "p_1": _p_1(rec.get("p_1"), path, k),
            "human_labels": _human_labels(rec.get("human_labels"), path, k),
            "raw_output": given["raw_output"] or (None if verdict != "unparseable" else str(rec["verdict"]))}


def _given(value: object) -> bool:
    """A value the row gives (not None, not a CSV's empty cell)."""
    return value is not None and not (isinstance(value, float) and value != value)  # NaN: not itself


class _Repeats:
    """Across every file read: the first row of each verdict (item, judge, strategy, order)
    and the first row giving each of an item's fields. An exact copy of a row is counted
    and skipped; a second verdict, or another value of an item's field, is an error naming
    both rows."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.where: list[tuple[Path, int]] = []
        self.verdicts: dict[tuple, int] = {}
        self.items: dict[tuple, dict[str, int]] = {}
        self.copies: dict[Path, list[str]] = {}

    def _both(self, i: int, path: Path, k: int) -> str:
        first_path, first_k = self.where[i]
        return (f"{path}: rows {first_k} and {k}" if first_path == path
                else f"{first_path}: row {first_k} and {path}: row {k}")

    def is_copy(self, row: dict, path: Path, k: int) -> bool:
        """True for an exact copy of an earlier row (counted in ``copies``); keeps ``row`` otherwise."""
        key = tuple(row[c] for c in VERDICT_KEY)
        if (i := self.verdicts.get(key)) is not None:
            field = first_difference(self.rows[i], row)
            if field is None:
                first_path, first_k = self.where[i]
                first = f"row {first_k}" if first_path == path else f"{first_path}: row {first_k}"
                self.copies.setdefault(path, []).append(f"row {k} repeats {first}")
                return True
            raise InputError(f"{self._both(i, path, k)} give item {key[2]!r}, judge {key[3]!r}, strategy "
                             f"{key[4]!r}, order {key[5]!r} different values of field {field!r} "
                             f"({self.rows[i][field]!r} and {row[field]!r})")
        fields = self.items.setdefault(key[:3], {})
        for field in ITEM_FIELDS:
            if not _given(row[field]):
                continue
            if (i := fields.get(field)) is None:
                fields[field] = len(self.rows)
            elif not same(self.rows[i][field], row[field]):
                raise InputError(f"{self._both(i, path, k)} give item {key[2]!r} different values of field "
                                 f"{field!r} ({self.rows[i][field]!r} and {row[field]!r})")
        self.verdicts[key] = len(self.rows)
        self.rows.append(row)
        self.where.append((path, k))
        return False


def read_generic(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every verdict file at ``root``: the judgment table. A row repeated exactly is counted
    and skipped; two verdicts for one (item, judge, strategy, order), or an item given two
    labels (or prompts, responses, models), are an error naming both rows."""
    report = ReadReport(SOURCE)
    repeats = _Repeats()
    for path in _files(Path(root)):
        file = report.file(path)
        raw = read_verdict_table(path, REQUIRED)
        unknown = sorted(set(raw.columns) - set(COLUMNS))
        if unknown:
            report.notes.append(f"{path}: columns not in the judgment table, ignored: {unknown}")
        for k, rec in enumerate(raw.to_dict("records"), start=1):
            row = _row(rec, path, k)
            if repeats.is_copy(row, path, k):
                file.reject(REPEATED)
                continue
            file.unparseable += row["verdict"] == "unparseable"
            file.rows_read += 1
        report.notes += copies_note(path, REPEATED, repeats.copies.get(path, []))
    return make_table(repeats.rows), report
