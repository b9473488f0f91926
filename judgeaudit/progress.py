"""Progress of long library work in steps, shown by whoever calls it: a stage passes its one
bar (``flows.runners.stage_bar``), the CLI a tqdm of its own, anything else nothing. The
library only plans steps and marks them done; it never draws a bar itself."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Steps(Protocol):
    """What the library needs of a bar (a ``tqdm`` is one): a total to add to, steps done."""

    total: float | None

    def update(self, n: float = 1) -> object: ...

    def refresh(self) -> object: ...


def plan(steps: Steps | None, n: int) -> None:
    """``n`` more steps to come."""
    if steps is not None and n:
        steps.total = (steps.total or 0) + n
        steps.refresh()


def done(steps: Steps | None, n: int = 1) -> None:
    """``n`` steps done."""
    if steps is not None and n:
        steps.update(n)


def each(steps: Steps | None, items: Iterable[T], n: int | None = None) -> Iterator[T]:
    """``items`` one by one, each marked done when the caller asks for the next; ``n``, how
    many there are (else they are counted first, so pass it for results still to come)."""
    if n is None:
        items = list(items)
        n = len(items)
    plan(steps, n)
    for item in items:
        yield item
        done(steps)
