"""What every stage's flow shares: reading an earlier stage's table (absent: which stage to
run first), validating (Great Expectations) and writing its own, and the empty summary of
an audit left out of params.yaml."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from flows.registry import WRITTEN_BY, stage
from judgeaudit.layout import Layout
from judgeaudit.tables import read_table, write_json
from tasks.io import validate, write


def table_path(table: str, layout: Layout) -> Path:
    return {"prompts": layout.prompts, "synthetic": layout.synthetic, "student_index": layout.student_index,
            "responses": layout.responses, "judgments": layout.judgments,
            "win_rates": layout.metrics / "win_rates.parquet", "pls": layout.metrics / "pls.parquet"}[table]


def _missing(path: Path, table: str, layout: Layout) -> str:
    by = WRITTEN_BY[table]
    return (f"{path}: no {table} table under {layout.root}; the {by!r} stage writes it: "
            f"run `dvc repro {by}` (or `judgeaudit run {by} --root {layout.root}`) first")


def missing_upstream(name: str, root: str | Path) -> str | None:
    """What stage ``name`` reads and is not there yet, with the stage to run first; None if all is there."""
    layout = Layout(Path(root))
    for table in stage(name).reads:
        if not table_path(table, layout).is_file():
            return _missing(table_path(table, layout), table, layout)
    return None


def upstream(path: Path, table: str, layout: Layout, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """An upstream table; absent, an error that names the stage to run first."""
    if not path.is_file():
        raise FileNotFoundError(_missing(path, table, layout))
    return read_table(path, required)


def read(path: Path, table: str, layout: Layout) -> pd.DataFrame:
    """An upstream table, validated against its suite."""
    return validate(upstream(path, table, layout), table, str(path), layout.quarantine)


def unconfigured(section: object, out: Path) -> bool:
    """An audit left out of params.yaml writes an empty summary, so DVC's outputs stay whole."""
    out.mkdir(parents=True, exist_ok=True)
    if section is None:
        write_json({}, out / "summary.json")
        return True
    return False


def publish(frames: pd.DataFrame | list[pd.DataFrame], table: str, stage_name: str, path: Path,
            layout: Layout) -> pd.DataFrame:
    """Validate the stage's table, then write it: an invalid table never lands in data/."""
    frame = frames if isinstance(frames, pd.DataFrame) else pd.concat(frames, ignore_index=True)
    frame = validate(frame, table, stage_name, layout.quarantine)
    write(frame, path)
    return frame
