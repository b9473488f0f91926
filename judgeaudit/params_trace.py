"""Which params a run reads: with ``JUDGEAUDIT_TRACE_PARAMS=FILE`` set, ``traced`` (which
every stage's flow applies to its params: flows.common.load_params) gives a ``Params`` that
records every section read from it ("leakage") and every field read from a section
("leakage.judges"), and the process appends them to FILE (one JSON
line: its command line, the reads) as it exits; so does each worker process of a stage's pool
(spawned, it has the stage's command line). The test suite checks each stage's reads
against the params dvc.yaml declares for it, so that a param a stage reads but does not
declare cannot leave it stale. Reads that bypass attribute access (``model_dump`` of a
section) are recorded as the section only."""

from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path

from pydantic import BaseModel

from judgeaudit.config import Params

ENV = "JUDGEAUDIT_TRACE_PARAMS"
_SEEN: set[str] = set()
_REGISTERED = False
_FIELDS = frozenset(Params.model_fields)


class TracedParams(Params):
    """A ``Params`` that notes the sections read from it (serialisation reads none). Pickled
    to a stage's worker process, it is traced there too: its reads are the stage's."""

    def __getattribute__(self, name: str):
        if name in _FIELDS:
            _SEEN.add(name)
        return super().__getattribute__(name)

    def __reduce__(self):
        sections = object.__getattribute__(self, "__dict__")
        return traced, (Params.model_construct(**{name: _untraced(sections[name]) for name in _FIELDS}),)


def _traced_section(name: str, value):
    """A copy of the section ``name`` that records "name.field" for each field read."""
    if not isinstance(value, BaseModel):
        return value
    base, fields = type(value), frozenset(type(value).model_fields)

    def __getattribute__(self, attr: str):
        if attr in fields:
            _SEEN.add(f"{name}.{attr}")
        return base.__getattribute__(self, attr)

    traced_type = type(f"Traced{base.__name__}", (base,), {"__getattribute__": __getattribute__})
    return traced_type.model_construct(_fields_set=value.model_fields_set, **value.__dict__)


def _untraced(value):
    """The plain section behind a traced copy (``_traced_section``)."""
    if not type(value).__name__.startswith("Traced"):
        return value
    plain = type(value).__mro__[1]
    return plain.model_construct(_fields_set=value.model_fields_set, **value.__dict__)


def _write(path: Path) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "sections": sorted(_SEEN)}) + "\n")


def traced(params: Params) -> Params:
    """``params`` as a ``TracedParams`` when ``JUDGEAUDIT_TRACE_PARAMS`` names a file."""
    target = os.environ.get(ENV)
    if not target:
        return params
    global _REGISTERED
    if not _REGISTERED:
        atexit.register(_write, Path(target))
        _REGISTERED = True
    return TracedParams.model_construct(**{name: _traced_section(name, params.__dict__[name]) for name in _FIELDS})
