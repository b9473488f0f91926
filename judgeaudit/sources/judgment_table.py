"""The general judgment table: one row per (item, judge, strategy, presentation order),
whatever the source (a benchmark's recorded verdicts, a live judge, the embedded
pipeline). Verdicts stay in the ORIGINAL labelling: "1" means response_1 won, whichever
position it was shown in.

Columns (``COLUMNS``): source, subset, item_id, prompt, response_1, response_2, model_1,
model_2 (None when unknown), judge, strategy (the prompting variant), order (the
response shown first: "1" or "2"), verdict ("1", "2", "tie", "unparseable"), p_1 (the
judge's probability that response_1 wins, where it gives one), label ("1", "2", "tie",
or None: gold label or human majority), human_labels (every annotator's label, where
there are several), raw_output (the judge's own text, where recorded).

Readers return the table with a ``ReadReport``: per file, the rows read, the rows
rejected with the reason, and the unparseable verdicts, so nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgeaudit.sources.text_input import utf8_text
from judgeaudit.tables import InputError

COLUMNS = ["source", "subset", "item_id", "prompt", "response_1", "response_2", "model_1", "model_2", "judge",
           "strategy", "order", "verdict", "p_1", "label", "human_labels", "raw_output"]
VERDICTS = ("1", "2", "tie", "unparseable")
LABELS = ("1", "2", "tie")
ORDERS = ("1", "2")
# the pair's identity within a judge's verdicts: one verdict per order
ITEM_KEY = ["source", "subset", "item_id", "judge", "strategy"]


@dataclass
class FileReport:
    """What one input file gave: rows read, rows rejected (with reasons), unparseable verdicts."""

    path: str
    rows_read: int = 0
    unparseable: int = 0
    rejected: Counter = field(default_factory=Counter)

    def reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def as_dict(self) -> dict:
        return {"path": self.path, "rows_read": self.rows_read, "rows_rejected": sum(self.rejected.values()),
                "rejected_reasons": json.dumps(dict(self.rejected), sort_keys=True),
                "unparseable": self.unparseable}


@dataclass
class ReadReport:
    """Every file a reader opened, and the notes it has for the user."""

    source: str
    files: list[FileReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: Counter = field(default_factory=Counter)  # what a reader verified, e.g. the order it inferred

    def file(self, path: str | Path) -> FileReport:
        report = FileReport(str(path))
        self.files.append(report)
        return report

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([f.as_dict() for f in self.files])

    def summary(self) -> dict:
        return {"source": self.source, "files": len(self.files),
                "rows_read": sum(f.rows_read for f in self.files),
                "rows_rejected": sum(sum(f.rejected.values()) for f in self.files),
                "unparseable": sum(f.unparseable for f in self.files), "notes": self.notes,
                **({"checks": dict(sorted(self.checks.items()))} if self.checks else {})}


def make_table(rows: list[dict]) -> pd.DataFrame:
    """The rows as a table with exactly ``COLUMNS`` (missing optional fields become None)."""
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("prompt", "response_1", "response_2"):  # text, whatever JSON type a source stored
        frame[col] = frame[col].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    frame["p_1"] = pd.to_numeric(frame["p_1"], errors="coerce").astype(float)
    for col in ("model_1", "model_2", "label", "raw_output"):
        frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
    return frame


def load_json(path: Path) -> Any:
    """A whole JSON file, with an error naming the file where it is malformed."""
    text = utf8_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: malformed JSON at line {exc.lineno} ({exc.msg})") from None


def need(record: Any, key: str, path: Path, where: str) -> Any:
    """``record[key]``, or an InputError naming the file, the record and the field."""
    if not isinstance(record, dict):
        raise InputError(f"{path}: {where}: expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise InputError(f"{path}: {where}: missing field {key!r} (has {sorted(record)})")
    return record[key]


def by_order(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the verdicts per item and judge/strategy, one column per order "1" / "2", missing
    where the judge saw one order only; the item's other fields, on the same index)."""
    wide = table.pivot_table(index=ITEM_KEY, columns="order", values="verdict", aggfunc="first")
    wide = wide.reindex(columns=list(ORDERS))
    return wide, table.drop_duplicates(ITEM_KEY).set_index(ITEM_KEY).reindex(wide.index)
