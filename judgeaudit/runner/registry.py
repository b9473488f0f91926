"""The stages, found by module (judgeaudit/stages/<name>.py) and ordered so that each comes
after the stages whose outputs it reads. Importing this imports no stage: a stage's process
loads only its own module."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

import judgeaudit.stages as _package
from judgeaudit.stagekit.declare import Stage


def module(name: str) -> ModuleType:
    """Stage ``name``'s module; a KeyError naming the stages when there is none."""
    if name not in names():
        raise KeyError(f"no stage {name!r}; the stages are {', '.join(names())}")
    return importlib.import_module(f"{_package.__name__}.{name}")


def stage(name: str) -> Stage:
    return module(name).STAGE


@cache
def _found() -> tuple[str, ...]:
    return tuple(sorted(m.name for m in pkgutil.iter_modules(_package.__path__) if not m.name.startswith("_")))


@cache
def stages() -> tuple[Stage, ...]:
    """Every stage, each after the stages whose outs it reads (ties by name). Imports them all."""
    declared = {name: importlib.import_module(f"{_package.__name__}.{name}").STAGE for name in _found()}
    written = {out: s.name for s in declared.values() for out in s.outs}
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ValueError(f"stages read each other's outputs in a circle: {' -> '.join((*path, name))}")
        for dep in declared[name].deps:
            if dep not in written:
                raise ValueError(f"stage {name} reads {dep!r}, which no stage writes")
            visit(written[dep], (*path, name))
        order.append(name)

    for name in declared:
        visit(name, ())
    return tuple(declared[n] for n in order)


def names() -> tuple[str, ...]:
    """The stages' names (alphabetical; ``stages()`` gives the run order)."""
    return _found()
