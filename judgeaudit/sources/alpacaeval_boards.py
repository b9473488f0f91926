"""AlpacaEval's published leaderboard CSVs (``docs/data_AlpacaEval_2/<annotator>_leaderboard.csv``):
one row per model with its win rate and length-controlled win rate against the baseline,
both in percent. Aggregates only: no per-instruction annotation.

Columns read: name, win_rate, length_controlled_winrate, avg_length. The model's
AlpacaEval id (``results/<id>/model_outputs.json``) is taken from whichever column holds
its outputs' URL (the published files shift ``link`` and ``samples`` by one column)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from judgeaudit.sources.text_input import read_csv_text
from judgeaudit.tables import InputError

REQUIRED = ("name", "win_rate", "length_controlled_winrate")
_RESULTS = re.compile(r"/results/([^/]+)/model_outputs")


def _model_id(row: pd.Series) -> str | None:
    for value in row.astype(str):
        match = _RESULTS.search(value)
        if match:
            return match.group(1)
    return None


def read_leaderboard_csv(path: str | Path) -> pd.DataFrame:
    """One published leaderboard: model (AlpacaEval id, else the display name), name,
    win_rate, lc_win_rate (percent), avg_length."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such leaderboard file")
    frame = read_csv_text(path)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; AlpacaEval leaderboards have {list(REQUIRED)}")
    if frame.empty:
        raise InputError(f"{path}: no model (a header without rows)")
    rows = []
    for i, row in frame.iterrows():
        record = {"model": _model_id(row) or row["name"], "name": row["name"]}
        for src, dst in (("win_rate", "win_rate"), ("length_controlled_winrate", "lc_win_rate")):
            try:
                value = float(row[src])
            except ValueError:
                raise InputError(f"{path}, row {i + 2}, field {src}: {row[src]!r} is not a number") from None
            if not 0 <= value <= 100:
                raise InputError(f"{path}, row {i + 2}, field {src}: {value} is not a percentage")
            record[dst] = value
        record["avg_length"] = pd.to_numeric(row.get("avg_length", ""), errors="coerce")
        rows.append(record)
    out = pd.DataFrame(rows)
    dup = out.model[out.model.duplicated()].tolist()
    if dup:
        raise InputError(f"{path}: model(s) {dup} listed twice")
    return out
