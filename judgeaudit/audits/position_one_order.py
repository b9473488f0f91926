"""Position bias where each pair was shown in one order only, the order drawn at random per
instruction (AlpacaEval: one seeded switch per instruction, the same for every model).

With both orders of a pair the report card compares a judge with itself. With one, the
instructions shown model-first and those shown baseline-first are two random halves, so
a gap between them is the position's doing, up to the draw:
- ``first_wins``: the mean probability that the output shown first wins, over every
  annotation; 0.5 without position bias, whatever the models' strength, where the halves
  are balanced;
- per model: its win rate (points) on the instructions where it was shown first, on those
  where it was shown second, and the difference (first - second);
- the same difference pooled over every model's annotations.
Every CI resamples instructions (one draw of the order covers all of an instruction's
annotations). The p-value is a randomization test, the design's own: the switch is redrawn
per instruction as a fair coin ``n_boot`` times, and p is the share of draws (the observed
one counted) whose difference lies at least as far from 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import BootstrapSettings, Estimate, joint_bootstrap

POOLED = "all models"
COLUMNS = ["judge", "baseline", "model", "n", "n_instructions", "n_first", "n_second", "win_rate_first",
           "win_rate_second", "difference", "ci_low", "ci_high", "p_randomization", "confidence"]


def _units(rows: pd.DataFrame, instructions: pd.Index) -> dict[str, np.ndarray]:
    """Per instruction: the model's summed win probability and its count, shown first and shown
    second; and the summed probability that the first-shown output won, with its count."""
    first = rows["order"].eq("2").to_numpy()  # response_2, the model, shown first
    q = 1.0 - rows["p_1"].to_numpy(dtype=float)
    where = instructions.get_indexer(rows["prompt"])

    def summed(values: np.ndarray) -> np.ndarray:
        return np.bincount(where, weights=values, minlength=len(instructions))

    return {"q_first": summed(q * first), "n_first": summed(first.astype(float)),
            "q_second": summed(q * ~first), "n_second": summed((~first).astype(float)),
            "first_wins": summed(np.where(first, q, 1.0 - q)), "n": summed(np.ones(len(rows)))}


def _difference(c: dict[str, np.ndarray]) -> np.ndarray:
    return 100 * (c["q_first"].sum(-1) / c["n_first"].sum(-1) - c["q_second"].sum(-1) / c["n_second"].sum(-1))


def randomization_p(units: dict[str, np.ndarray], n_draws: int, seed: int) -> float:
    """Two-sided p of the difference under a fair coin per instruction (see the module)."""
    q = units["q_first"] + units["q_second"]
    n = units["n_first"] + units["n_second"]
    observed = _difference({k: v[None, :] for k, v in units.items()})[0]
    coin = np.random.default_rng(seed).integers(0, 2, size=(n_draws, len(q))).astype(bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        drawn = 100 * ((coin * q).sum(1) / (coin * n).sum(1) - (~coin * q).sum(1) / (~coin * n).sum(1))
    beyond = np.abs(drawn[np.isfinite(drawn)]) >= abs(observed) - 1e-12
    return float((1 + beyond.sum()) / (1 + beyond.size))


def _row(rows: pd.DataFrame, instructions: pd.Index, keys: dict, boot: BootstrapSettings
         ) -> tuple[dict, Estimate]:
    units = _units(rows, instructions)
    est = joint_bootstrap(units, {"difference": _difference,
                                  "first_wins": lambda c: c["first_wins"].sum(-1) / c["n"].sum(-1)}, boot)
    diff = est["difference"]
    row = keys | {"n": len(rows), "n_instructions": int((units["n"] > 0).sum()),
                  "n_first": int(units["n_first"].sum()), "n_second": int(units["n_second"].sum()),
                  "win_rate_first": 100 * units["q_first"].sum() / units["n_first"].sum(),
                  "win_rate_second": 100 * units["q_second"].sum() / units["n_second"].sum(),
                  "difference": diff.estimate, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
                  "p_randomization": randomization_p(units, boot.n_boot, boot.seed), "confidence": boot.confidence}
    return row, est["first_wins"]


def position_one_order(table: pd.DataFrame, boot: BootstrapSettings) -> tuple[pd.DataFrame, dict]:
    """(one row per (judge, baseline, model) and a pooled row per judge, ``COLUMNS``; the
    pooled figures per judge) from a judgment table with one order per pair (``order`` "1":
    response_1, the baseline, shown first; "2": the model) and the judge's ``p_1``. The
    baseline against itself is left out: it wins half of every pair, wherever it is shown."""
    rows = table[(table["model_2"] != table["model_1"]) & table["p_1"].notna()]
    out, pooled = [], {}
    for (judge, baseline), grp in rows.groupby(["judge", "model_1"], sort=True):
        instructions = pd.Index(sorted(grp["prompt"].unique()))
        if grp["order"].nunique() < 2:
            continue  # every pair in one order: nothing to compare
        for model, mine in grp.groupby("model_2", sort=True):
            if mine["order"].nunique() == 2:
                out.append(_row(mine, instructions, {"judge": judge, "baseline": baseline, "model": model}, boot)[0])
        row, first_wins = _row(grp, instructions, {"judge": judge, "baseline": baseline, "model": POOLED}, boot)
        out.append(row)
        pooled[judge] = {"baseline": baseline, "first_wins": first_wins.as_dict(),  # n: instructions
                         "annotations": row["n"],
                         "difference": {k: row[k] for k in ("difference", "ci_low", "ci_high", "n",
                                                            "p_randomization")} | {"draws": boot.n_boot}}
    frame = pd.DataFrame(out, columns=COLUMNS)
    models = frame[frame["model"] != POOLED]
    for judge, summary in pooled.items():
        mine = models[models["judge"] == judge]
        summary |= {"models": len(mine), "models_better_second": int((mine["ci_high"] < 0).sum()),
                    "models_better_first": int((mine["ci_low"] > 0).sum())}
    return frame, pooled
