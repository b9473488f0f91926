"""What every stage's flow shares: its params (with their precision applied), reading an
earlier stage's table (absent: which stage to run first), validating (Great Expectations)
and writing its own, and the empty summary of an audit left out of params.yaml."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from flows.registry import missing_message
from judgeaudit import config, precision
from judgeaudit.layout import Layout
from judgeaudit.params_trace import traced
from judgeaudit.tables import read_table, write_json
from tasks.io import validate, write


def load_params(params_path: str) -> config.Params:
    """The params file, validated, with its ``precision`` applied to this process and the
    workers its stage starts (judgeaudit/precision.py): a flow that a deployment or a test
    runs directly scores as the same flow under `python -m flows.run` does. Under
    ``JUDGEAUDIT_TRACE_PARAMS`` the params record what the stage reads (judgeaudit/params_trace.py)."""
    params = traced(config.load_params(params_path))
    precision.apply(params.precision, params.cpu_dispatch)
    return params


def upstream(path: Path, table: str, layout: Layout, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """An upstream table; absent, an error that names the stage to run first."""
    if not path.is_file():
        raise FileNotFoundError(missing_message(path, table, layout))
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
