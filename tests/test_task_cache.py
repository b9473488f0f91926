"""Drill: a cached task result never stands in for files that are not there. The prefix
and score-range flows create their output folder before the cached task runs, so an
empty (or half-written) folder in a new data root must not look done."""

from __future__ import annotations

from types import SimpleNamespace

from tasks.cache import artifact_cache


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
