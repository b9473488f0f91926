"""Run a table's suite; on failure, quarantine the bad rows and stop with a message
naming the table, each failed expectation and example rows."""

from __future__ import annotations

import logging
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from judgeaudit.tables import write_table



def quarantine_path(quarantine_dir: str | Path, table: str, source: str) -> Path:
    """A new file per failed validation, named by table, source (the stage or file) and UTC
    time, so that one run's quarantined rows never overwrite another's."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    where = re.sub(r"[^\w.-]+", "_", Path(source).stem if "/" in source else source)[-60:] or "table"
    return Path(quarantine_dir) / f"{table}--{where}--{stamp}.parquet"


class TableValidationError(ValueError):
    """A stage table broke its data contract."""


def _context():  # one ephemeral GE context per process: creating it is the slow part
    global _CTX
    if _CTX is None:
        import great_expectations as gx

        # the docs-site module sets its own logger to INFO, which prints a line per process
        for name in ("great_expectations", "great_expectations.data_context.types.base"):
            logging.getLogger(name).setLevel(logging.ERROR)
        _CTX = gx.get_context(mode="ephemeral")
        _CTX.variables.progress_bars = {"globally": False, "metric_calculations": False}
        _CTX.data_sources.add_pandas("judgeaudit")
    return _CTX


_CTX = None
_SUITES: dict = {}


def warm_up(suites: bool = False) -> None:
    """Import Great Expectations and build this process's context now (seconds), e.g.
    while something else waits, instead of at the first validation; ``suites``: every
    table's suite too (a second: a process that forks the stages has them built once)."""
    from judgeaudit.schemas.suites import SUITES, optional_columns

    _context()
    for table in SUITES if suites else ():
        _suite(table, optional_columns(table))  # as the stages write them: with their optional columns


def _suite(table: str, columns: frozenset[str] = frozenset()):
    """The named table's suite for a table with ``columns``, built once per process and set
    of optional columns present (GE's add_expectation compares each expectation with the
    others: about 0.07 s a suite)."""
    from judgeaudit.schemas.suites import build_suite, optional_columns

    key = (table, optional_columns(table) & columns)
    if key not in _SUITES:
        _SUITES[key] = build_suite(*key)
    return _SUITES[key]


def _rows(indices: list) -> str:
    """Rows by their 1-based number in the table, as the readers count them."""
    numbers = sorted(int(i) + 1 for i in indices)
    shown = ", ".join(map(str, numbers[:5])) + (f" and {len(numbers) - 5} more" if len(numbers) > 5 else "")
    return f"row{'s' if len(numbers) > 1 else ''} {shown}"


def validate_table(frame: pd.DataFrame, table: str, source: str = "", *,
                   quarantine_dir: str | Path) -> pd.DataFrame:
    """Validate ``frame`` against the ``table`` suite and return it unchanged if it passes;
    else quarantine its bad rows in a new file under ``quarantine_dir`` (the data root's
    ``quarantine/``) and raise TableValidationError."""
    ctx = _context()
    datasource = ctx.data_sources.get("judgeaudit")
    try:
        asset = datasource.get_asset(table)
    except LookupError:
        asset = datasource.add_dataframe_asset(name=table)
    try:
        definition = asset.get_batch_definition("all")
    except (KeyError, LookupError):
        definition = asset.add_batch_definition_whole_dataframe("all")
    frame = frame.reset_index(drop=True)
    batch = definition.get_batch(batch_parameters={"dataframe": frame})
    suite = _suite(table, frozenset(frame.columns))
    # pass or fail first (about half the time of a full result, which lists every unexpected
    # row even when there is none); the full result only for a table that fails
    if batch.validate(suite, result_format="BOOLEAN_ONLY").success:
        return frame
    result = batch.validate(suite, result_format={"result_format": "COMPLETE", "partial_unexpected_count": 5})

    problems, bad_rows = [], {}
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
        indices = (r.result or {}).get("unexpected_index_list") or []
        for i in indices:
            bad_rows.setdefault(int(i), []).append(cfg.type)
        examples = frame.loc[list(indices)[:2]].to_dict("records") if indices else []
        observed = (r.result or {}).get("observed_value")
        detail = (f"{len(indices)} row(s), e.g. {examples}; {_rows(indices)} of the table" if indices
                  else f"observed {observed!r}")
        problems.append(f"{cfg.type}({kwargs}): {detail}")
    where = f"{table} ({source})" if source else table
    message = f"table {where} failed validation:\n  " + "\n  ".join(problems)
    if bad_rows:
        quarantined = frame.loc[sorted(bad_rows)].copy()
        quarantined["failed_expectations"] = [", ".join(bad_rows[i]) for i in sorted(bad_rows)]
        path = write_table(quarantined.astype({c: str for c in quarantined.columns
                                               if quarantined[c].dtype == object}),
                           quarantine_path(quarantine_dir, table, source))
        message += f"\n  {len(bad_rows)} invalid row(s) quarantined in {path}"
    raise TableValidationError(message)
