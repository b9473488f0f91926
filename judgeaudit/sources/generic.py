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
from judgeaudit.tables import InputError, read_table

SOURCE = "generic"
REQUIRED = ("item_id", "judge", "verdict")
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


def read_generic(root: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """Every verdict file at ``root``: the judgment table."""
    report = ReadReport(SOURCE)
    frames = []
    for path in _files(Path(root)):
        file = report.file(path)
        raw = read_table(path, REQUIRED)
        unknown = sorted(set(raw.columns) - set(COLUMNS))
        if unknown:
            report.notes.append(f"{path}: columns not in the judgment table, ignored: {unknown}")
        rows = []
        for k, rec in enumerate(raw.to_dict("records"), start=1):
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
            p_1 = rec.get("p_1")
            if p_1 is not None and not np.isnan(float(p_1)) and not 0.0 <= float(p_1) <= 1.0:
                raise InputError(f"{path}: row {k}: field 'p_1' must be a probability in [0, 1], got {p_1!r}")
            if verdict == "unparseable":
                file.unparseable += 1
            file.rows_read += 1
            rows.append({**{c: rec.get(c) for c in COLUMNS}, "source": rec.get("source") or path.stem,
                         "subset": rec.get("subset") or "all", "item_id": str(rec["item_id"]),
                         "strategy": rec.get("strategy") or "default", "order": order, "verdict": verdict,
                         "label": label, "human_labels": _human_labels(rec.get("human_labels"), path, k),
                         "raw_output": rec.get("raw_output") or (None if verdict != "unparseable"
                                                                 else str(rec["verdict"]))})
        frames.append(make_table(rows))
    table = pd.concat(frames, ignore_index=True)
    dup = table.duplicated(["source", "subset", "item_id", "judge", "strategy", "order"])
    if dup.any():
        first = table[dup].iloc[0]
        raise InputError(f"{root}: {int(dup.sum())} duplicated verdict(s), e.g. item {first.item_id!r}, judge "
                         f"{first.judge!r}, strategy {first.strategy!r}, order {first.order!r}")
    return table, report
