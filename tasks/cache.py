"""Task cache keys: the code of the task's stage (the same import closure DVC's deps are
computed from, so the two caches cannot disagree on what a code change touches), the
params sections it reads (dvc.yaml's params for the stage are written from these and the
flow's ``PARAMS`` by `judgeaudit deps --write`, so neither cache can rerun on a change the
other ignores), the content of its inputs (tables with their row order, files,
directories), and the runtime that decides a result's bits (``runtime_digest``). A task
that writes an artifact is not served from cache when that artifact is missing."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import os
import platform
import re
from collections.abc import Sequence
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

import pandas as pd
from prefect.cache_policies import CacheKeyFnPolicy

from flows.deps import ROOT, library_closure, module_file
from judgeaudit import dispatch, precision
from judgeaudit.config import Params
from judgeaudit.dispatch import cpu_flags
from judgeaudit.report.machine import cpu_model

# what writes or computes the tables beyond the project's own requirements (model files, chat
# templates), and the numeric stack named even where the project's metadata is not installed
_ALSO_RUNTIME = ("safetensors", "jinja2", "torch", "transformers", "tokenizers", "trl", "numpy", "pandas",
                 "pyarrow", "scipy", "scikit-learn", "pot")
# settings that change which kernels run or how many threads split a reduction
_NUMERIC_ENV = tuple(sorted({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG",
                             *dispatch.VARIABLES, precision.VARIABLE}))  # params.yaml's cpu_dispatch, precision
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


def _gpus(root: Path = Path("/proc/driver/nvidia/gpus")) -> list[str]:
    """The NVIDIA GPUs' models from the driver's files, without initialising CUDA here (a
    process that forks its workers must not)."""
    try:
        lines = [line for info in sorted(root.glob("*/information")) for line in info.read_text().splitlines()]
    except OSError:
        return []
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Model:")]


def _runtime_packages() -> list[str]:
    try:
        declared = requires("judgeaudit") or []
    except PackageNotFoundError:  # run from a source tree that was never installed
        declared = []
    names = [re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0] for r in declared if "extra ==" not in r]
    return sorted({*names, *_ALSO_RUNTIME}, key=str.lower)


@functools.cache
def runtime() -> dict[str, Any]:
    """What besides code, params and inputs decides a result's bits: the package versions
    (the project's runtime requirements, each as installed), the CPU (model and flags), its
    core count (torch splits reductions by threads, and the split moves the rounding), the
    GPUs, Python, and the numeric settings in the environment. The embedded default's tables
    are bitwise reproducible on one machine, not across CPUs or versions, so a result made
    elsewhere (a home folder shared across machines, another virtual environment) is not
    one this runtime would make."""
    versions = {}
    for name in _runtime_packages():
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {"packages": versions, "cpu": cpu_model(),
            "cpu_flags": hashlib.sha256(cpu_flags().encode()).hexdigest(), "cores": os.cpu_count(),
            "gpus": _gpus(), "python": f"{platform.python_implementation()} {platform.python_version()}",
            "system": f"{platform.system()} {platform.machine()}",
            "env": {k: os.environ[k] for k in _NUMERIC_ENV if k in os.environ}}


def runtime_digest() -> str:
    return hashlib.sha256(json.dumps(runtime(), sort_keys=True).encode()).hexdigest()


def _digest(value: Any, sections: Sequence[str]) -> str:
    if isinstance(value, Params):
        dumped = value.model_dump(mode="json")
        return json.dumps({k: dumped[k] for k in sections} if sections else dumped, sort_keys=True)
    if isinstance(value, pd.DataFrame):
        # row by row, in order: a task fed the same rows in another order (a batch, a shuffle
        # by index) makes another result, and DVC, hashing the file, reruns its stage
        rows = pd.util.hash_pandas_object(value, index=False).to_numpy()
        return hashlib.sha256(rows.tobytes()).hexdigest() + str(list(value.columns)) + str(list(value.dtypes))
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
        h = hashlib.sha256(inspect.getsource(fn).encode() + code_digest(_module_of(fn)).encode()
                           + runtime_digest().encode())
        for name in sorted(set(inputs) - {output}):
            h.update(name.encode())
            h.update(_digest(inputs[name], sections).encode())
        return h.hexdigest()

    policy = CacheKeyFnPolicy(cache_key_fn=key)
    policy.sections = tuple(sections)  # read back by `judgeaudit deps`: the stage's DVC params
    return policy
