"""Readers of recorded verdicts, registered by name: each turns one benchmark's files into
the general judgment table (``judgment_table.COLUMNS``) and a report of what it read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport

Reader = Callable[[str | Path], tuple[pd.DataFrame, ReadReport]]


def _readers() -> dict[str, Reader]:
    from judgeaudit.sources.alpacaeval import read_alpacaeval
    from judgeaudit.sources.generic import read_generic
    from judgeaudit.sources.judgebench import read_judgebench
    from judgeaudit.sources.llmbar import read_llmbar
    from judgeaudit.sources.pandalm import read_pandalm

    return {"llmbar": read_llmbar, "pandalm": read_pandalm, "judgebench": read_judgebench,
            "alpacaeval": read_alpacaeval, "generic": read_generic}


SOURCE_NAMES = ("llmbar", "pandalm", "judgebench", "alpacaeval", "generic")


def read_source(name: str, path: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """The judgment table of source ``name`` read from ``path``."""
    readers = _readers()
    if name not in readers:
        raise ValueError(f"unknown source {name!r}; known: {sorted(readers)}")
    return readers[name](path)
