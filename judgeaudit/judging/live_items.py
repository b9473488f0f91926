"""The real pairs a live judge judges: any sources the readers take, several at once, each
a seeded sample of ``limit`` pairs where given."""

from __future__ import annotations

import pandas as pd

from judgeaudit.judging.benchmark import benchmark_items
from judgeaudit.sources import SOURCE_NAMES, read_source
from judgeaudit.sources.pairs import read_pairs

# the readers of recorded verdicts, and ``pairs``: labelled pairs with no verdict (a gold set)
DATA_SOURCES = (*SOURCE_NAMES, "pairs")


def pairs_to_judge(sources: list[tuple[str, str]], limit: int | None = None,
                   seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """(items with ``judging.benchmark.ITEM`` columns, notes) of every (source name, path)."""
    frames, notes = [], []
    for name, path in sources:
        table, report = read_pairs(path) if name == "pairs" else read_source(name, path)
        items = benchmark_items(table, limit, seed)
        if items.empty:
            raise ValueError(f"{path}: no pair to judge in this {name} source")
        whole = table.drop_duplicates(["source", "subset", "item_id"]).shape[0]
        notes += list(report.notes)
        if len(items) < whole:
            notes.append(f"{name}: a seeded sample of {len(items)} of its {whole} pairs (--limit, seed {seed})")
        frames.append(items)
    items = pd.concat(frames, ignore_index=True)
    dup = items.duplicated(["source", "subset", "item_id"])
    if dup.any():
        first = items.loc[dup, ["source", "subset", "item_id"]].iloc[0].tolist()
        raise ValueError(f"--data: the pair {first} comes twice (the same source given twice?)")
    return items, notes
