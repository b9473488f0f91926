"""The prompt table every stage starts from: the user's file (``corpus.prompts_file``) or
prompts generated from templates. Its own module, light to import: `judgeaudit run` reads
the user's file before any server starts, and every stage's entry imports this, not the
bootstrap stage's training code."""

from __future__ import annotations

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.tables import read_table

PROMPT_COLUMNS = ["prompt_id", "split", "prompt"]


def make_prompts(params: Params) -> pd.DataFrame:
    """Train and eval prompts: the user's file when given, else generated from templates."""
    if params.corpus.prompts_file:
        frame = read_table(params.corpus.prompts_file, PROMPT_COLUMNS)
        path = params.corpus.prompts_file
        bad = frame.index[~frame["split"].isin(["train", "eval"])].tolist()
        if bad:
            raise ValueError(f"{path}: row {bad[0] + 1}: field 'split' must be 'train' or 'eval', "
                             f"got {frame.loc[bad[0], 'split']!r}")
        frame = frame.assign(category=frame.get("category", "user"), fact=frame.get("fact", ""))
        return frame[["prompt_id", "split", "category", "prompt", "fact"]].astype(str)
    c = params.corpus
    rows = [dict(split=split, **vars(it)) for split, items in (
        ("train", make_items(c.n_train_prompts, params.seed + 1, "t", c.prompt_categories)),
        ("eval", make_items(c.n_eval_prompts, params.seed + 2, "e", c.prompt_categories)))
        for it in items]
    return pd.DataFrame(rows)[["prompt_id", "split", "category", "prompt", "fact"]]
