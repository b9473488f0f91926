"""The rows of the report's Papers section: one per (paper table, figure), written by the
stage that reproduces the paper as ``paper_rows.json`` in its own output folder and gathered
by ``judgeaudit/report/papers.py`` (the contract: docs/papers.md).

A leaf module (the standard library and ``judgeaudit.tables`` only), so that any stage can
build its rows with it."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from pathlib import Path

from judgeaudit.tables import write_json

PAPER_ROWS_FILE = "paper_rows.json"
PAPER_ROW_KEYS = ("paper", "table", "figure", "paper_value", "ours", "ci_low", "ci_high", "n",
                  "reproduces", "differs", "overlay")


class PaperRowError(ValueError):
    """A row that breaks the contract; the message names the field."""


def _text(field: str, value: object, *, required: bool) -> str:
    if not isinstance(value, str):
        raise PaperRowError(f"paper row field {field!r} must be a str, got {type(value).__name__}: {value!r}")
    if required and not value.strip():
        raise PaperRowError(f"paper row field {field!r} must not be empty")
    return value


def _paper_value(value: object) -> str | None:
    """The paper's figure as text; a number is accepted and written as text (``%g``)."""
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}"
    raise PaperRowError(f"paper row field 'paper_value' must be a str or None, got "
                        f"{type(value).__name__}: {value!r}")


def _number(field: str, value: object) -> float | None:
    """A float or None; NaN and infinities (no figure) become None, as JSON writes them."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PaperRowError(f"paper row field {field!r} must be a number or None, got "
                            f"{type(value).__name__}: {value!r}")
    value = float(value)
    return value if math.isfinite(value) else None


def _count(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise PaperRowError(f"paper row field 'n' must be a non-negative int or None, got "
                            f"{type(value).__name__}: {value!r}")
    return int(value)


def _flag(value: object) -> bool | None:
    if value is None:
        return None
    item = value.item() if hasattr(value, "item") else value  # numpy's bool_
    if not isinstance(item, bool):
        raise PaperRowError(f"paper row field 'reproduces' must be True, False or None, got "
                            f"{type(value).__name__}: {value!r}")
    return item


def paper_row(paper: str, table: str, figure: str, *, paper_value: str | float | None = None,
              ours: float | None = None, ci_low: float | None = None, ci_high: float | None = None,
              n: int | None = None, differs: str = "", overlay: str = "",
              reproduces: bool | None = None) -> dict:
    """One row, its types checked (``PaperRowError`` naming the field). ``reproduces`` is
    what the caller judged, never computed here, and None where the paper's figure is
    unknown (``paper_value`` None: "not read offline"): there is nothing to reproduce against."""
    row = {"paper": _text("paper", paper, required=True),
           "table": _text("table", table, required=True),
           "figure": _text("figure", figure, required=True),
           "paper_value": _paper_value(paper_value),
           "ours": _number("ours", ours), "ci_low": _number("ci_low", ci_low),
           "ci_high": _number("ci_high", ci_high), "n": _count(n),
           "reproduces": _flag(reproduces),
           "differs": _text("differs", differs, required=False),
           "overlay": _text("overlay", overlay, required=False)}
    if row["ci_low"] is not None and row["ci_high"] is not None and row["ci_low"] > row["ci_high"]:
        raise PaperRowError(f"paper row fields 'ci_low' ({row['ci_low']}) and 'ci_high' "
                            f"({row['ci_high']}) are reversed")
    if row["paper_value"] is None:
        row["reproduces"] = None
    return row


def check_row(row: Mapping) -> dict:
    """A row read back or built by hand, checked: exactly ``PAPER_ROW_KEYS``, each well typed."""
    if not isinstance(row, Mapping):
        raise PaperRowError(f"a paper row must be a mapping, got {type(row).__name__}")
    missing = [k for k in PAPER_ROW_KEYS if k not in row]
    extra = sorted(set(row) - set(PAPER_ROW_KEYS))
    if missing or extra:
        raise PaperRowError(f"paper row {row.get('paper')!r} / {row.get('table')!r}: "
                            f"missing fields {missing}, unknown fields {extra}")
    fields = {k: row[k] for k in PAPER_ROW_KEYS}
    return paper_row(fields.pop("paper"), fields.pop("table"), fields.pop("figure"), **fields)


def write_paper_rows(rows: Iterable[Mapping], folder: str | Path) -> Path:
    """Write ``rows`` (checked) as ``<folder>/paper_rows.json``, in the order given."""
    return write_json([check_row(r) for r in rows], Path(folder) / PAPER_ROWS_FILE)


def read_paper_rows(folder: str | Path) -> list[dict]:
    """The rows in ``<folder>/paper_rows.json``, checked; [] where the file is absent."""
    path = Path(folder) / PAPER_ROWS_FILE
    if not path.exists():
        return []
    rows = json.loads(path.read_text())
    if not isinstance(rows, list):
        raise PaperRowError(f"{path}: a JSON list of rows expected, got {type(rows).__name__}")
    try:
        return [check_row(r) for r in rows]
    except PaperRowError as error:
        raise PaperRowError(f"{path}: {error}") from None
