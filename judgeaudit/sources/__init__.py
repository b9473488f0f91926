"""Readers of recorded verdicts, registered by name: each turns one benchmark's files into
the general judgment table (``judgment_table.COLUMNS``) and a report of what it read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from judgeaudit.sources.judgment_table import ReadReport

Reader = Callable[[str | Path], tuple[pd.DataFrame, ReadReport]]


from judgeaudit.sources.alpacaeval import read_alpaca_annotations  # noqa: E402
from judgeaudit.sources.generic import read_generic  # noqa: E402
from judgeaudit.sources.judgebench import read_judgebench  # noqa: E402
from judgeaudit.sources.llmbar import read_llmbar  # noqa: E402
from judgeaudit.sources.pandalm import read_pandalm  # noqa: E402

READERS: dict[str, Reader] = {"llmbar": read_llmbar, "pandalm": read_pandalm, "judgebench": read_judgebench,
                              "alpacaeval": read_alpaca_annotations, "generic": read_generic}
SOURCE_NAMES = tuple(READERS)


def read_source(name: str, path: str | Path) -> tuple[pd.DataFrame, ReadReport]:
    """The judgment table of source ``name`` read from ``path``."""
    if name not in READERS:
        raise ValueError(f"unknown source {name!r}; known: {sorted(READERS)}")
    return READERS[name](path)
