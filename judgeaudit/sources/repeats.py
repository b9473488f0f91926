"""Repeated records in a benchmark file: an exact copy of an earlier record is corruption,
skipped and counted in the file's read report with its reason, and named in a note; a
record under the same key that differs is a conflict no reader can settle, an error
naming both records and the first field where they differ."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from pathlib import Path

from judgeaudit.sources.judgment_table import FileReport
from judgeaudit.tables import InputError

_MISSING = object()
_EXAMPLES = 3  # records a note names; the count covers the rest


def first_difference(a: Mapping, b: Mapping) -> str | None:
    """The first field (``a``'s order, then ``b``'s) whose values differ, else None."""
    for key in list(a) + [k for k in b if k not in a]:
        if not same(a.get(key, _MISSING), b.get(key, _MISSING)):
            return key
    return None


def same(x: object, y: object) -> bool:
    """Equal values; NaN (a missing number in a table) equals NaN."""
    if x is y:
        return True
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True
    return bool(x == y)


class Repeats:
    """The first record seen under each key of one file, and the exact copies skipped."""

    def __init__(self, path: Path, file: FileReport, reason: str) -> None:
        self.path, self.file, self.reason = path, file, reason
        self._first: dict[Hashable, tuple[int, Mapping]] = {}
        self.copies: list[str] = []

    def first_of(self, key: Hashable) -> int | None:
        """The number of the first record seen under ``key``, if any."""
        seen = self._first.get(key)
        return None if seen is None else seen[0]

    def is_copy(self, key: Hashable, number: int, record: Mapping, same: str, name: str = "") -> bool:
        """False for the first record under ``key``; True for an exact copy of it (counted
        and noted, for the caller to skip); an InputError where it differs. ``same`` says
        what the two records share ("both have idx 3"), ``name`` names the key in the note."""
        if key not in self._first:
            self._first[key] = (number, record)
            return False
        first, earlier = self._first[key]
        field = first_difference(earlier, record)
        if field is not None:
            raise InputError(f"{self.path}: records {first} and {number} {same} but differ (field {field!r}: "
                             f"{earlier.get(field)!r} and {record.get(field)!r})")
        self.counted(f"record {number} repeats record {first}" + (f" ({name})" if name else ""))
        return True

    def counted(self, example: str) -> None:
        """Count one exact copy under this file's reason; ``example`` names it for the note."""
        self.file.reject(self.reason)
        self.copies.append(example)

    def note(self) -> list[str]:
        """The note naming the copies skipped (none where there were none)."""
        return copies_note(self.path, self.reason, self.copies)


def copies_note(path: Path, reason: str, copies: list[str]) -> list[str]:
    """A note naming the first few exact copies skipped in ``path`` (none where there were none)."""
    if not copies:
        return []
    shown = "; ".join(copies[:_EXAMPLES]) + (f"; and {len(copies) - _EXAMPLES} more"
                                             if len(copies) > _EXAMPLES else "")
    return [f"{path}: {len(copies)} exact repeat(s) of an earlier record skipped and counted as rejected "
            f"({reason}): {shown}"]
