"""A live judge on a benchmark's real pairs: any configured model (transformers, vllm or
openai backend; likelihood, prompted or generative verdicts), both presentation orders,
its verdicts in the general judgment table beside the judges the benchmark recorded; and
the presentation attacks on those pairs (the response the judge made lose, rewritten by
each attack, judged again)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgeaudit.attacks.rewriter import ModelRewriter, attack_texts
from judgeaudit.judging.both_orders import verdicts_both_orders
from judgeaudit.models.base import LanguageModel
from judgeaudit.progress import Steps, each
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


_SCORE_1 = {"1": 1.0, "2": 0.0, "tie": 0.5}  # response 1's share of one verdict; unparseable: none
PAIR = ["source", "subset", "item_id"]  # a pair's key: ids may repeat across sources


def score_1(table: pd.DataFrame) -> pd.Series:
    """Response 1's win score per pair (``PAIR``) over the orders the judge saw: 1, 0, 0.5,
    or 0.25 / 0.75 with one tie; nan where no verdict parsed."""
    return table.assign(s=table["verdict"].map(_SCORE_1)).groupby(PAIR, sort=False)["s"].mean()


def attack_items(model: LanguageModel, judge: str, mode: str, settings, items: pd.DataFrame,
                 live: pd.DataFrame, attacks: Sequence[str], seed: int = 0,
                 rewriter: ModelRewriter | None = None, steps: Steps | None = None) -> pd.DataFrame:
    """Each attack on the pairs ``live`` (the judge's clean verdicts on ``items``) decided: the
    response it made lose, rewritten by the attack (through ``rewriter`` where it has a template
    for it, else by rule), both orders judged again. One row per (attack, pair): which response
    was attacked and its attacked text, its win score before and after, whether the attack made
    it win (``flipped``), and whether the judge was right before (labelled pairs). A pair the
    judge left undecided (a tie over its two orders) has no loser and is left out. A step of
    ``steps`` per attack."""
    before = score_1(live)
    before = before[before.notna() & (before != 0.5)]
    decided = items.set_index(PAIR, drop=False).loc[before.index]
    if decided.empty:
        return pd.DataFrame()
    lose_1 = (before < 0.5).to_numpy()
    was = np.where(lose_1, before, 1 - before)
    winner = np.where(lose_1, "2", "1")
    label = decided["label"].to_numpy()
    rows = []
    loser = np.where(lose_1, decided["response_1"], decided["response_2"]).tolist()
    for name in each(steps, list(attacks)):
        text = np.array(attack_texts(name, loser, rewriter), dtype=object)
        attacked = decided.assign(response_1=np.where(lose_1, text, decided["response_1"]),
                                  response_2=np.where(~lose_1, text, decided["response_2"]))
        after = score_1(judge_items(model, judge, mode, settings, attacked.reset_index(drop=True), seed=seed))
        after = after.reindex(decided.index).to_numpy()
        now = np.where(lose_1, after, 1 - after)
        rows.append(pd.DataFrame({
            "source": decided["source"].to_numpy(), "subset": decided["subset"].to_numpy(),
            "item_id": decided["item_id"].to_numpy(), "judge": judge, "strategy": mode, "attack": name,
            "attacked": np.where(lose_1, "1", "2"), "attacked_response": text, "score_before": was,
            "score_after": now,
            "flipped": now > 0.5, "label": label,
            "right_before": np.where(np.isin(label, ["1", "2"]), winner == label, None)}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
