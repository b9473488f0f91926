"""What every stage reads and writes through: an earlier stage's table (absent: which stage
to run first), validated by its Great Expectations suite; its own tables, validated before
they are written, so an invalid table never lands in the data folder."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgeaudit.layout import Layout
from judgeaudit.schemas.validate import validate_table
from judgeaudit.tables import read_table, write_json, write_table


def missing_message(path: Path, table: str, by: str, root: Path) -> str:
    return (f"{path}: no {table} table under {root}; the {by!r} stage writes it: "
            f"run `dvc repro {by}` (or `judgeaudit run {by} --root {root}`) first")


def upstream(path: Path, table: str, layout: Layout, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """An earlier stage's table; absent, an error that names the stage to run first."""
    if not path.is_file():
        from judgeaudit.stagekit.declare import WRITERS

        raise FileNotFoundError(missing_message(path, table, WRITERS.get(table, "an earlier"), layout.root))
    return read_table(path, required)


def read(path: Path, table: str, layout: Layout) -> pd.DataFrame:
    """An earlier stage's table, validated against its suite."""
    return validate_table(upstream(path, table, layout), table, str(path), quarantine_dir=layout.quarantine)


def publish(frames: pd.DataFrame | list[pd.DataFrame], table: str, stage: str, path: Path,
            layout: Layout) -> pd.DataFrame:
    """Validate the stage's table, then write it."""
    frame = frames if isinstance(frames, pd.DataFrame) else pd.concat(frames, ignore_index=True)
    frame = validate_table(frame, table, stage, quarantine_dir=layout.quarantine)
    write_table(frame, path)
    return frame


def write(frame: pd.DataFrame, path: Path) -> Path:
    """A table that no suite covers (a stage's own detail, read by no later stage)."""
    return write_table(frame, path)


def empty_summary(out: Path) -> dict:
    """What a stage left out of params.yaml writes: an empty summary, so DVC's outputs stay whole."""
    out.mkdir(parents=True, exist_ok=True)
    write_json({}, out / "summary.json")
    return {}
