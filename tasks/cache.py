"""Task cache keys: the code of the task's stage (the same import closure DVC's deps are
computed from, so the two caches cannot disagree on what a code change touches), the
params sections it reads (dvc.yaml's params for the stage are written from these and the
flow's ``PARAMS`` by `judgeaudit deps --write`, so neither cache can rerun on a change the
other ignores), and the content of its inputs (tables, files, directories). A task that
writes an artifact is not served from cache when that artifact is missing."""

from __future__ import annotations

import functools
from datetime import timedelta
import hashlib
import importlib
import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from prefect.cache_policies import CacheKeyFnPolicy

from flows.deps import ROOT, library_closure, module_file
from judgeaudit.config import Params

# the params sections every model-loading task reads, and how such tasks retry and persist
MODELS = ("seed", "corpus", "embedded", "models", "model_defaults")
LOAD = dict(retries=2, retry_delay_seconds=5, persist_result=True, cache_expiration=timedelta(days=30))


def path_digest(path: Path) -> str:
    """Content hash of a file, or of every file under a directory."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path) if f != path else f.name).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


@functools.cache
def code_digest(module: str) -> str:
    """Hash of ``module`` and every project module it imports (transitively): an edit to
    any of them invalidates the cached results of the tasks it defines, and only those."""
    h = hashlib.sha256()
    for name in sorted(library_closure({module})):
        path = module_file(name)
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _as_defined(fn: Any) -> Any:
    """``fn`` as its module defines it. Prefect's process pool pickles a flow's local
    modules by value, so the copy a worker process holds has no source file; its module
    and qualified name still lead back to the original (a ``@task`` wraps it as ``.fn``)."""
    if Path(inspect.getfile(fn)).is_file():
        return fn
    defined = importlib.import_module(fn.__module__)
    for name in fn.__qualname__.split("."):
        defined = getattr(defined, name)
    return getattr(defined, "fn", defined)


def _module_of(fn: Any) -> str:
    """The dotted project module a function is defined in, from its file (a flow file run
    as a deployment entrypoint is loaded under another module name)."""
    rel = Path(inspect.getfile(fn)).resolve().relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def written(path: Path, artifacts: str | None = None) -> bool:
    """``path`` exists and, for a folder, holds a file, or a folder with a file, matching
    ``artifacts`` (any file if None)."""
    if path.is_file():
        return True
    matches = path.glob(artifacts) if artifacts else path.iterdir() if path.is_dir() else []
    return any(m.is_file() or any(f.is_file() for f in m.rglob("*")) for m in matches)


def _digest(value: Any, sections: Sequence[str]) -> str:
    if isinstance(value, Params):
        dumped = value.model_dump(mode="json")
        return json.dumps({k: dumped[k] for k in sections} if sections else dumped, sort_keys=True)
    if isinstance(value, pd.DataFrame):
        return str(int(pd.util.hash_pandas_object(value, index=False).sum())) + str(list(value.columns))
    if isinstance(value, Path):
        return path_digest(value) if value.exists() else f"missing:{value}"
    return json.dumps(value, sort_keys=True, default=str)


def artifact_cache(sections: Sequence[str] = (), output: str | None = None,
                   artifacts: str | None = None) -> CacheKeyFnPolicy:
    """A cache policy for tasks that read ``sections`` of params; ``output`` names the
    parameter holding the path the task writes, and ``artifacts`` a glob of what it
    writes there: the task re-runs when the path is gone or holds none of them (a flow
    that creates the folder first, or a new data root, must not look done)."""

    def key(ctx, inputs: dict[str, Any]) -> str | None:
        if output is not None and not written(Path(inputs[output]), artifacts):
            return None
        fn = _as_defined(ctx.task.fn)
        h = hashlib.sha256(inspect.getsource(fn).encode() + code_digest(_module_of(fn)).encode())
        for name in sorted(set(inputs) - {output}):
            h.update(name.encode())
            h.update(_digest(inputs[name], sections).encode())
        return h.hexdigest()

    policy = CacheKeyFnPolicy(cache_key_fn=key)
    policy.sections = tuple(sections)  # read back by `judgeaudit deps`: the stage's DVC params
    return policy
