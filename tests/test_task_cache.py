"""Drills: a cached task result never stands in for files that are not there (the prefix
and score-range flows create their output folder before the cached task runs, so an
empty or half-written folder in a new data root must not look done), nor for a result
made from the same rows in another order, nor for one another runtime made."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from types import SimpleNamespace

import pandas as pd
from prefect import flow, task

from flows.runners import parallel
from judgeaudit.config import Params, Scale, load_params
from judgeaudit.report.machine import machine
from tasks.cache import artifact_cache, runtime
from tests.conftest import ROOT, recorded_task_states


def _task() -> None:
    """A task body for the cache key (its source is part of the key)."""


def test_an_output_folder_without_its_artifacts_is_not_served_from_cache(tmp_path):
    key = artifact_cache(("seed",), output="out", artifacts="rm-*").cache_key_fn
    ctx = SimpleNamespace(task=SimpleNamespace(fn=_task))
    out = tmp_path / "new-root" / "prefix"
    assert key(ctx, {"out": out, "x": 1}) is None  # absent
    out.mkdir(parents=True)
    assert key(ctx, {"out": out, "x": 1}) is None  # created by the flow, still empty
    (out / "summary.json").write_text("{}")
    (out / "rm-baseline").mkdir()
    assert key(ctx, {"out": out, "x": 1}) is None  # a summary, an empty model folder: not the artifacts
    (out / "rm-baseline" / "model.safetensors").write_bytes(b"weights")
    first = key(ctx, {"out": out, "x": 1})
    assert first is not None and first == key(ctx, {"out": out, "x": 1}) != key(ctx, {"out": out, "x": 2})


@task(cache_policy=artifact_cache(("seed",)), persist_result=True)
def _doubled(params: Params, x: int) -> int:
    return 2 * x


@flow
def _doubling(params: Params) -> list[int]:
    with parallel(params.scale) as runner:
        return [f.result() for f in [runner.submit(_doubled, dict(params=params, x=x)) for x in (1, 2)]]


def test_tasks_in_worker_processes_are_cached(prefect_server, tiny_params_file):
    """Prefect's process pool pickles a flow's local modules by value, so the task function a
    worker holds has no source file: its cache key must still come out (it did not: every
    robustness task logged 'Error encountered when computing cache key' and re-ran)."""
    # a seed of its own: a result storage the user set (PREFECT_LOCAL_STORAGE_PATH; else conftest.py
    # gives the session an empty one) outlives the session, and the first run must run
    params = load_params(str(tiny_params_file)).model_copy(
        update={"scale": Scale(processes=2), "seed": uuid.uuid4().int % 2**31})
    first, second = (_doubling(params, return_state=True) for _ in range(2))
    assert first.result() == second.result() == [2, 4]

    def task_states(state) -> list[str]:
        return sorted(recorded_task_states(state.state_details.flow_run_id, expected=2).values())

    assert task_states(first) == ["Completed", "Completed"]
    assert task_states(second) == ["Cached", "Cached"]

    # what README gives for a rerun that must recompute (`dvc repro -f` alone serves these
    # from the result storage): the setting reaches the pool's workers
    from prefect.settings import PREFECT_TASKS_REFRESH_CACHE, temporary_settings

    with temporary_settings(updates={PREFECT_TASKS_REFRESH_CACHE: True}):
        forced = _doubling(params, return_state=True)
    assert forced.result() == [2, 4]
    assert task_states(forced) == ["Completed", "Completed"]


def test_a_table_in_another_row_order_is_another_input():
    """DVC hashes a table's file, so the same rows reordered upstream rerun the stage; its
    tasks must not then serve the result made from the old order (they did: the key summed
    the rows' hashes)."""
    key = artifact_cache(("seed",)).cache_key_fn
    ctx = SimpleNamespace(task=SimpleNamespace(fn=_task))
    table = pd.DataFrame({"prompt_id": [1, 2, 3], "answer": ["a", "b", "c"]})
    same = key(ctx, {"rows": table.copy()})
    assert same == key(ctx, {"rows": table})
    assert same != key(ctx, {"rows": table.iloc[::-1].reset_index(drop=True)})
    assert same != key(ctx, {"rows": table.astype({"prompt_id": "float64"})})
    assert same != key(ctx, {"rows": table.rename(columns={"answer": "response"})})


def test_the_runtime_in_the_key_is_what_the_report_records():
    """The key's runtime names the machine the report names, and the versions installed."""
    here, report = runtime(), machine()
    assert here["cpu"] == report["cpu"] and here["cores"] == report["cores"]
    for name, installed in report["packages"].items():
        assert here["packages"][name] == installed, name
    assert len(here["cpu_flags"]) == 64


_KEY = """
from types import SimpleNamespace
from tasks.cache import artifact_cache
from tests.test_task_cache import _task
print(artifact_cache(("seed",)).cache_key_fn(SimpleNamespace(task=SimpleNamespace(fn=_task)), {"x": 1}))
"""


def test_another_runtime_makes_another_key():
    """A result storage shared by two runtimes (a home folder on two machines, two virtual
    environments) serves each only its own results: here, a setting that moves torch's
    thread split (and so the rounding of its reductions) changes every key."""
    def key(**env: str) -> str:
        base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "ATEN_CPU_CAPABILITY")}
        out = subprocess.run([sys.executable, "-c", _KEY], cwd=ROOT, check=True,
                             capture_output=True, text=True, env={**base, "PYTHONPATH": str(ROOT), **env})
        return out.stdout.strip()

    plain = key()
    assert len(plain) == 64 and plain == key()
    assert key(OMP_NUM_THREADS="1") != plain
    assert key(ATEN_CPU_CAPABILITY="default") not in (plain, key(OMP_NUM_THREADS="1"))
