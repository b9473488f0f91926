"""Reading and writing stage tables: clear errors on bad input, atomic writes so a
failure never leaves a half-written file in data/."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import numbers
import os
import re
import secrets
import shutil
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd


class InputError(ValueError):
    """An input file is unusable; the message names the file, row and field."""


def not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError, offset: int = 0, line: int | None = None
             ) -> InputError:
    """The error for ``data`` (from byte ``offset`` of ``path``) that failed to decode."""
    at = offset + exc.start
    line = data.count(b"\n", 0, exc.start) + 1 if line is None else line
    return InputError(f"{path}: line {line}: not UTF-8 text ({exc.reason} at byte {at})")


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, bytes) of each line, gunzipped where the name ends in .gz;
    a gzip file that is cut short or is not gzip is an InputError."""
    opener = gzip.open if path.suffix == ".gz" else open
    offset = 0
    with opener(path, "rb") as f:
        lineno = 0
        try:
            for lineno, raw in enumerate(f, start=1):
                yield lineno, offset, raw
                offset += len(raw)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"{path}: not a complete gzip file (after line {lineno}: {exc})") from None


def numbered_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each JSON line of ``path`` (gzipped when it ends in .gz),
    blank lines skipped; errors name the file and line (and the byte that is not UTF-8)."""
    for lineno, offset, raw in _lines(path):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise not_utf8(path, raw, exc, offset, lineno) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {lineno}: malformed JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {lineno}: expected a JSON object, got {type(row).__name__}")
        yield lineno, row


def read_jsonl(path: Path) -> list[dict]:
    """JSON lines, each an object; errors name the file and line."""
    return [row for _, row in numbered_jsonl(path)]


def read_table(path: str | Path, required: Sequence[str] = ()) -> pd.DataFrame:
    """Read JSONL, CSV or Parquet; check it is non-empty and has ``required`` columns."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        frame = pd.DataFrame(read_jsonl(path))
    elif suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        raise InputError(f"{path}: unsupported table format {suffix!r} (use .jsonl, .csv or .parquet)")
    if frame.empty:
        raise InputError(f"{path}: the table has no rows")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing required column(s) {missing}; found {list(frame.columns)}")
    for col in required:
        nulls = frame.index[frame[col].isna()].tolist()
        if nulls:
            raise InputError(f"{path}: row {nulls[0] + 1}: field {col!r} is empty "
                             f"({len(nulls)} row(s) in all)")
    return frame


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write Parquet atomically (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a write that was killed
        if _abandoned(stale):
            stale.unlink(missing_ok=True)
    fd, tmp = _scratch_file(path)
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_json(obj: object, path: str | Path) -> Path:
    """Write JSON atomically, keys sorted so reruns give identical bytes. A missing or
    unbounded number (NaN, an infinity) is written as null: JSON has neither, and Python's
    NaN and Infinity tokens fail a browser's JSON.parse and other strict readers."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(obj), indent=2, sort_keys=True, default=str, allow_nan=False)
    fd, tmp = _scratch_file(path)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)
    return path


def _finite(obj: object) -> object:
    """``obj`` with every non-finite float (numpy's too) as None."""
    if isinstance(obj, dict):
        return {key: _finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(value) for value in obj]
    if isinstance(obj, numbers.Real) and not math.isfinite(obj):
        return None
    return obj


# the scratch names of write_table and atomic_dir: ".<name>.<writer's pid>-<8 random chars>[.tmp]"
# (earlier versions wrote no pid: such a name is always a leftover)
_SCRATCH = re.compile(r"^\..+\.(?:(\d+)-)?[A-Za-z0-9_]{8}(\.tmp)?$")


def _scratch_prefix(path: Path) -> str:
    """A scratch name says which process writes it, so that a run removes the leftovers of
    processes that are gone and never the file another live run (a stage running beside
    it on the same data root) is writing."""
    return f".{path.name}.{os.getpid()}-"


def _scratch_name(path: Path) -> Path:
    return path.parent / f"{_scratch_prefix(path)}{secrets.token_hex(4)}"


def _scratch_file(path: Path) -> tuple[int, str]:
    """A new scratch file beside ``path``, open for writing (fd, name). Created with the
    modes a plain write gives (0666 less the umask), not tempfile's private 0600: the file
    it becomes must be as readable as any other in a shared data folder."""
    while True:
        name = f"{_scratch_name(path)}.tmp"
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue


def _scratch_dir(path: Path) -> Path:
    """A new scratch folder beside ``path``: 0777 less the umask, as mkdir gives (not
    tempfile's 0700), for the model folder it becomes."""
    while True:
        name = _scratch_name(path)
        try:
            name.mkdir(0o777)
            return name
        except FileExistsError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _abandoned(path: Path) -> bool:
    """A scratch file or folder whose writer is gone."""
    match = _SCRATCH.match(path.name)
    return bool(match) and (match.group(1) is None or not _alive(int(match.group(1))))


def remove_leftovers(root: str | Path) -> list[Path]:
    """Remove what interrupted atomic writes left under ``root`` (a run killed mid-write
    leaves its scratch file or folder), not what a live process is writing; return what
    was removed."""
    removed = [p for p in Path(root).rglob(".*") if _abandoned(p)] if Path(root).is_dir() else []
    for path in removed:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return removed


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a scratch directory that replaces ``path`` only if the block succeeds; the
    scratch directories of earlier writes that were killed are removed first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*"):  # left by a write that was killed
        if _abandoned(stale):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = _scratch_dir(path)
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
