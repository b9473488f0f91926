"""Reading benchmark files as text, with errors that name the file, the line and the byte:
a file that is not UTF-8 or cannot be read, a malformed JSON document, a CSV that pandas
cannot tokenise (a truncated download, a row with a field too many)."""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from judgeaudit.tables import InputError, not_utf8, read_table

# pandas' C parser counts a CSV's physical rows from 0 (the header is row 0, so its "row n"
# is data row n); its "line n" counts from 1 (data row n - 1)
_PANDAS_ROW = re.compile(r"\brow (\d+)")
_PANDAS_LINE = re.compile(r"\bline (\d+)")


def utf8_text(path: Path) -> str:
    """The whole file as text (gunzipped where the name ends in .gz); an InputError naming
    the line and byte where it is not UTF-8, or the file where it cannot be read."""
    try:
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, data, exc) from None


def load_json(path: Path) -> Any:
    """A whole JSON document; errors name the file and line."""
    try:
        return json.loads(utf8_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: malformed JSON ({exc.msg})") from None


def read_csv_text(path: Path) -> pd.DataFrame:
    """A CSV file, every cell a string; errors name the file (and the parser's row)."""
    text = utf8_text(path)
    if not text.strip():
        raise InputError(f"{path}: the file is empty")
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: {_csv_row(str(exc))}not a readable CSV ({str(exc).strip()})") from None


def read_verdict_table(path: Path, required: Sequence[str]) -> pd.DataFrame:
    """A JSONL, CSV or Parquet table (``tables.read_table``'s checks: not empty, the
    ``required`` columns filled), with text that is not UTF-8 and a CSV pandas cannot
    tokenise reported by file and row."""
    if path.suffix.lower() in (".jsonl", ".ndjson", ".csv") and path.is_file():
        utf8_text(path)  # pandas' and json's own errors name neither the file nor the line
    try:
        return read_table(path, required)
    except pd.errors.ParserError as exc:
        raise InputError(f"{path}: {_csv_row(str(exc))}malformed CSV ({exc})") from None
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"{path}: the table has no header ({exc})") from None


def _csv_row(message: str) -> str:
    """"row N: " for the data row (1 = the first after the header) pandas' message names."""
    if m := _PANDAS_ROW.search(message):
        return f"row {int(m.group(1))}: "
    if m := _PANDAS_LINE.search(message):
        return f"row {int(m.group(1)) - 1}: "
    return ""
