"""Prefect tasks every stage uses: validate a table against its suite, write a table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task

from judgeaudit.schemas.validate import validate_table
from judgeaudit.tables import write_table


@task(task_run_name="validate-{table}")
def validate(frame: pd.DataFrame, table: str, source: str, quarantine: Path) -> pd.DataFrame:
    return validate_table(frame, table, source, quarantine_dir=quarantine)


@task(retries=2, retry_delay_seconds=2, task_run_name="write-{path.name}")
def write(frame: pd.DataFrame, path: Path) -> str:
    return str(write_table(frame, path))
