"""A live judge on a benchmark's real pairs: any configured model (transformers, vllm or
openai backend; likelihood, prompted or generative verdicts), both presentation orders,
its verdicts in the general judgment table beside the judges the benchmark recorded."""

from __future__ import annotations

import pandas as pd

from judgeaudit.judging.both_orders import verdicts_both_orders
from judgeaudit.models.base import LanguageModel
from judgeaudit.sources.judgment_table import make_table

ITEM = ["source", "subset", "item_id", "prompt", "response_1", "response_2", "model_1", "model_2", "label",
        "human_labels"]
# position verdict -> original labelling, per order (the response shown first)
_ORIGINAL = {"1": {"A": "1", "B": "2"}, "2": {"A": "2", "B": "1"}}


def benchmark_items(table: pd.DataFrame, limit: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The distinct pairs of a judgment table (a seeded sample of ``limit`` if given)."""
    items = table.drop_duplicates(["source", "subset", "item_id"])[ITEM].reset_index(drop=True)
    if limit is not None and limit < len(items):
        items = items.sample(n=limit, random_state=seed).sort_index().reset_index(drop=True)
    return items


def judge_items(model: LanguageModel, judge: str, mode: str, settings, items: pd.DataFrame,
                seed: int = 0) -> pd.DataFrame:
    """The judge's verdicts on ``items`` in both orders, as judgment-table rows
    (strategy = the verdict mode)."""
    orders = verdicts_both_orders(model, mode, settings, items["prompt"], items["response_1"],
                                  items["response_2"], seed=seed)
    rows = []
    for order, key in (("1", "AB"), ("2", "BA")):
        got = orders[key]
        outputs = got.get("output") or [None] * len(items)
        for item, verdict, p_a, output in zip(items.to_dict("records"), got["verdict"], got["p_a"], outputs):
            p_1 = float(p_a) if order == "1" else 1.0 - float(p_a)
            rows.append({**item, "judge": judge, "strategy": mode, "order": order,
                         "verdict": _ORIGINAL[order].get(verdict, verdict),
                         "p_1": None if p_1 != p_1 else p_1, "raw_output": output})
    return make_table(rows)
