"""Input files read whole as UTF-8 text (gunzipped where the name ends in .gz), JSON, JSON
lines and CSV, with every error naming the file and, where it has one, the line: Python's
own UnicodeDecodeError, JSONDecodeError and pandas' parser errors name neither."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from judgeaudit.tables import InputError


def read_text(path: Path) -> str:
    """The file's text; an InputError naming the file (and the line of the first byte
    that is not UTF-8) where it cannot be read or decoded."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}: line {line}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def load_json(path: Path) -> Any:
    """A whole JSON document; errors name the file and line."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: malformed JSON ({exc.msg})") from None


def jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank JSON line; errors name the file and line."""
    # split on "\n" only: JSON strings may hold U+2028 and other breaks str.splitlines takes
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {lineno}: malformed JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {lineno}: expected a JSON object, got {type(row).__name__}")
        yield lineno, row


def read_csv_text(path: Path) -> pd.DataFrame:
    """A CSV file, every cell a string; errors name the file (and the parser's line)."""
    text = read_text(path)
    if not text.strip():
        raise InputError(f"{path}: the file is empty")
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: not a readable CSV ({str(exc).strip()})") from None
