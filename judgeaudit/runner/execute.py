"""Run one stage: its params (precision applied, then cut to what it declares), what it
reads (validated; absent: which stage to run first), its pool, then ``run``. The same call
serves `dvc repro` (python -m flows.run STAGE) and the stage's Prefect flow."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgeaudit import config, precision
from judgeaudit.layout import Layout
from judgeaudit.runner import registry
from judgeaudit.stagekit.declare import Stage, table_path, writer_of
from judgeaudit.stagekit.io import empty_summary, missing_message, read
from judgeaudit.runner.params_view import view
from judgeaudit.stagekit.pool import PRELOAD, Pool, dask_executor


def load_params(params_path: str | Path) -> config.Params:
    """The params file, validated, with its precision applied to this process."""
    params = config.load_params(params_path)
    precision.apply(params.precision, params.cpu_dispatch)
    return params


def missing_upstream(name: str, root: str | Path) -> str | None:
    """What stage ``name`` reads and is not there yet, with the stage to run first; None if all is there."""
    for table in registry.stage(name).reads:
        path = table_path(table, Path(root))
        if not path.is_file():
            return missing_message(path, table, writer_of(table), Path(root))
    return None


@contextlib.contextmanager
def pool_for(stage: Stage, scale: config.Scale) -> Iterator[Pool]:
    """The stage's pool: worker processes for a pooled stage, a Dask cluster for judging when
    ``scale.runner`` is dask, else its units in turn in this process."""
    if stage.pool:
        with Pool(stage.name, scale.processes, preload=(f"judgeaudit.stages.{stage.name}",)) as pool:
            yield pool
    elif scale.runner == "dask" and stage.name == "judge":
        executor = dask_executor(scale.workers, scale.threads_per_worker, scale.address)
        try:
            with Pool(stage.name, executor=executor) as pool:
                yield pool
        finally:
            executor._client.close()  # and the cluster it started
    else:
        with Pool(stage.name, one_thread=False) as pool:
            yield pool


def execute(name: str, params_path: str | Path = "params.yaml", root: str | Path = "data") -> Any:
    """Run stage ``name`` on the data under ``root``; its summary."""
    from judgeaudit.tables import remove_leftovers

    stage = registry.stage(name)
    params = load_params(params_path)
    if stage.pool and params.scale.processes > 1:  # the workers' imports, beside the stage's own
        from judgeaudit.workers import fork_server

        fork_server((*PRELOAD, f"judgeaudit.stages.{name}"))
    module = registry.module(name)
    if missing := missing_upstream(name, root):
        raise FileNotFoundError(missing)
    for path in remove_leftovers(root):
        print(f"judgeaudit: removed {path}, left by an interrupted write", file=sys.stderr)
    layout = Layout(Path(root))
    if stage.section is not None and getattr(params, stage.section) is None:
        for kept in stage.persist:  # DVC wants every out, a kept record even while unused
            (layout.root / kept).mkdir(parents=True, exist_ok=True)
        return empty_summary(layout.root / stage.outs[0])
    started = time.monotonic()
    tables = {table: read(table_path(table, layout.root), table, layout) for table in stage.reads}
    with pool_for(stage, params.scale) as pool:
        result = module.run(view(params, name, stage.params), layout, tables, pool)
    print(f"judgeaudit: {name} done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return result
