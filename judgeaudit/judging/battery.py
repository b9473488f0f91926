"""A judge through the bias battery (``attacks.battery``): its verdicts on the clean pairs in
both presentation orders, then on each bias's attacked copy of every pair, judged the same
way (any ``LanguageModel``, any verdict mode, through ``judging.benchmark.judge_items``).

The attacked side of a pair is the response the judge made lose on the clean pair (as
``judging.benchmark.attack_items`` does), so a flip is the bias making the loser win. A
labelled pair the judge left tied over its two orders has no loser: there the wrong
response is attacked, so the "toward the wrong response" figure covers every labelled
pair the judge did not already get wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgeaudit.attacks.battery import BATTERY, ORDER_ONLY, check_biases
from judgeaudit.judging.benchmark import PAIR, judge_items, score_1
from judgeaudit.models.base import LanguageModel
from judgeaudit.progress import Steps, done, plan



@dataclass(frozen=True)
class BatteryRun:
    """``live``: the clean verdicts (judgment-table rows, both orders); ``pairs``: one row
    per (bias, attacked pair) of every bias judged on an attacked copy."""

    live: pd.DataFrame
    pairs: pd.DataFrame


def attacked_sides(items: pd.DataFrame, live: pd.DataFrame) -> pd.DataFrame:
    """Per pair of ``items`` that can be attacked: ``attacked`` ("1"/"2"), ``role`` ("loser":
    the response the judge made lose; "wrong": a labelled pair it left tied, whose wrong
    response is attacked), ``before`` (response 1's clean score), ``right_before`` (True /
    False on labelled pairs the judge decided, None otherwise). Pairs with no parsed
    verdict, and unlabelled ties, are left out."""
    before = score_1(live)
    keyed = items.set_index(PAIR, drop=False)
    keyed = keyed[~keyed.index.duplicated()]
    s = before.reindex(keyed.index).to_numpy(float)
    label = keyed["label"].to_numpy(object)
    labelled = np.isin(label, ["1", "2"])
    decided = ~np.isnan(s) & (s != 0.5)
    tied = (s == 0.5) & labelled
    attacked = np.where(decided, np.where(s < 0.5, "1", "2"), np.where(label == "1", "2", "1"))
    winner = np.where(attacked == "1", "2", "1")
    right = np.where(decided & labelled, winner == label, None)
    out = keyed.assign(attacked=attacked, role=np.where(decided, "loser", "wrong"), before=s,
                       right_before=right)
    return out[decided | tied].reset_index(drop=True)


def _attacked_items(name: str, targets: pd.DataFrame) -> pd.DataFrame:
    """The attacked copies of ``targets`` (item columns kept) under bias ``name``."""
    transform = BATTERY[name].transform
    new = [transform(p, r1, r2, a) for p, r1, r2, a in
           zip(targets["prompt"], targets["response_1"], targets["response_2"], targets["attacked"])]
    prompts, firsts, seconds = (list(col) for col in zip(*new)) if new else ([], [], [])
    return targets.assign(prompt=prompts, response_1=firsts, response_2=seconds)


def judge_bias(model: LanguageModel, judge: str, mode: str, settings, name: str, targets: pd.DataFrame,
               seed: int = 0) -> pd.DataFrame:
    """Bias ``name`` on the pairs ``targets`` (``attacked_sides``), judged in both orders: one
    row per pair with the attacked response's win score before and after, ``flipped`` (a
    loser made to win; None where the wrong side of a tie was attacked) and
    ``turned_wrong`` (the wrong response made to win, on labelled pairs the judge did not
    already get wrong; None elsewhere)."""
    attacked = _attacked_items(name, targets)
    after = score_1(judge_items(model, judge, mode, settings, attacked.drop(
        columns=["attacked", "role", "before", "right_before"]), seed=seed))
    after = after.reindex(pd.MultiIndex.from_frame(targets[PAIR])).to_numpy(float)
    on_1 = (targets["attacked"] == "1").to_numpy()
    was = np.where(on_1, targets["before"], 1 - targets["before"].to_numpy(float))
    now = np.where(on_1, after, 1 - after)
    wins = np.where(np.isnan(now), False, now > 0.5)
    loser = (targets["role"] == "loser").to_numpy()
    right = targets["right_before"].to_numpy(object)
    eligible = (right == True) | ~loser  # noqa: E712  (True / False / None)
    text = np.where(on_1, attacked["response_1"], attacked["response_2"])
    return pd.DataFrame({
        "source": targets["source"].to_numpy(), "subset": targets["subset"].to_numpy(),
        "item_id": targets["item_id"].to_numpy(), "judge": judge, "strategy": mode, "bias": name,
        "attacked": targets["attacked"].to_numpy(), "role": targets["role"].to_numpy(),
        "attacked_prompt": attacked["prompt"].to_numpy(), "attacked_response": text,
        "score_before": was, "score_after": now,
        "flipped": np.where(loser, wins, None), "label": targets["label"].to_numpy(),
        "right_before": right, "turned_wrong": np.where(eligible, wins, None)})


def run_battery(model: LanguageModel, judge: str, mode: str, settings, items: pd.DataFrame,
                biases: Sequence[str] | None = None, live: pd.DataFrame | None = None, seed: int = 0,
                steps: Steps | None = None) -> BatteryRun:
    """The judge on ``items`` (``judging.benchmark.ITEM`` columns) clean (unless ``live``,
    its clean verdicts, is given) and under each bias of ``biases`` (default: the whole
    battery). Position needs no attacked copy: the clean verdicts in both orders measure
    it. One step of ``steps`` for the clean verdicts (where judged here) and one per bias."""
    names = check_biases(list(biases) if biases is not None else list(BATTERY))
    plan(steps, len(names) + (live is None))
    if live is None:
        live = judge_items(model, judge, mode, settings, items, seed=seed)
        done(steps)
    targets = attacked_sides(items, live)
    rows = []
    for name in names:
        if name not in ORDER_ONLY and len(targets):
            rows.append(judge_bias(model, judge, mode, settings, name, targets, seed=seed))
        done(steps)
    return BatteryRun(live, pd.concat(rows, ignore_index=True) if rows else pd.DataFrame())
