"""Drill: a cached task result never stands in for files that are not there. The prefix
and score-range flows create their output folder before the cached task runs, so an
empty (or half-written) folder in a new data root must not look done."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from prefect import flow, task

from flows.runners import parallel
from judgeaudit.config import Params, Scale, load_params
from tasks.cache import artifact_cache
from tests.conftest import recorded_task_states


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
