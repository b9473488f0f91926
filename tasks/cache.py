"""Task cache keys: the task's code, the params sections it reads, and the content of
its inputs (tables, files, directories). A task that writes an artifact is not
served from cache when that artifact is missing on disk."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from prefect.cache_policies import CacheKeyFnPolicy

import judgeaudit
from judgeaudit.config import Params


def path_digest(path: Path) -> str:
    """Content hash of a file, or of every file under a directory."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path) if f != path else f.name).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


@functools.cache
def library_digest() -> str:
    """Hash of the library's source: a code change invalidates cached results."""
    root = Path(judgeaudit.__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


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
        h = hashlib.sha256(inspect.getsource(ctx.task.fn).encode() + library_digest().encode())
        for name in sorted(set(inputs) - {output}):
            h.update(name.encode())
            h.update(_digest(inputs[name], sections).encode())
        return h.hexdigest()

    return CacheKeyFnPolicy(cache_key_fn=key)
