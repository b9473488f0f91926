"""The whole AlpacaEval 2.0 leaderboard (raw, LC, style control, Bradley-Terry with 1,000
resamples) timed, and the same annotations through AlpacaEval's own length-controlled GLM
code, side by side, in one run.

AlpacaEval's code (the ``alpaca-eval`` package from PyPI) is installed by this script into
its own virtual environment, never the project's and outside the checkout
(``$XDG_CACHE_HOME/judgeaudit/venv-alpaca-eval``, ``~/.cache`` by default), so that nothing
that walks the source tree (linters, greps, audits of unsafe loading) reads its third-party
code. It fetches
its instruction difficulty and its gamed-baseline annotations from a hub even for its
smaller GLMs, which cannot run here: this script hands it, in place of that download,
the instruction difficulty judgeaudit estimated and judgeaudit's stand-in for the gamed
baselines (``win_rates.gamed_stand_in``), and compares like with like on both
``length_controlled_noreg`` and ``length_controlled_v1`` (the published GLM, regularised
with the gamed rows). AlpacaEval maps the difficulty onto an annotation file by row
position, so every model's annotations are first put in one instruction order.

judgeaudit runs both ways of choosing the GLM's penalty (``LCSettings.cv``): "liblinear",
AlpacaEval's 50 fits per model, and "exact", every model's folds and grid solved at once
by ``audits.l1_logistic`` (torch on every core here, as liblinear runs on one).

    python bench/alpacaeval_lc.py [--data ../shared/data/alpacaeval/weighted_alpaca_eval_gpt4_turbo]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import judgeaudit.audits.l1_logistic  # noqa: F401  the exact path's torch, imported before any fit is timed
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.audits.win_rates import (
    LCSettings,
    controlled_win_rates,
    gamed_stand_in,
    instruction_difficulty,
    preferences,
)
from judgeaudit.stages.leaderboard import LeaderboardSettings, build_leaderboard
from judgeaudit.sources import read_source

HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "judgeaudit" / "venv-alpaca-eval"
PACKAGE = "alpaca-eval==0.6.6"

# runs inside AlpacaEval's environment: its GLM on each model, the difficulty handed over
CHILD = r'''
import json, sys, time, warnings
import pandas as pd
warnings.filterwarnings("ignore")
from alpaca_eval.metrics import glm_winrate
work = sys.argv[1]
glm_winrate.hf_hub_download = lambda **kw: f"{work}/df_gamed.csv"  # the hub download, handed over
out, seconds = {}, {}
for glm in ("length_controlled_noreg", "length_controlled_v1"):
    start = time.perf_counter()
    for path in sorted(__import__("pathlib").Path(work, "annotations").glob("*.json")):
        df = pd.read_json(path)
        m = glm_winrate.get_length_controlled_winrate(df, glm_name=glm, save_weights_dir=None,
                                                      is_add_glm_preference_inplace=False,
                                                      is_warn_extreme_changes=False)
        out.setdefault(path.stem, {})[glm] = m["length_controlled_winrate"]
    seconds[glm] = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "models": out}))
'''


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"installing {PACKAGE} into {VENV} (its own environment) ...", flush=True)
        VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PACKAGE], check=True)
    return python


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default=str(HERE.parents[1] / "shared" / "data" / "alpacaeval" /
                                         "weighted_alpaca_eval_gpt4_turbo"))
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    table, _ = read_source("alpacaeval", args.data)

    # the whole leaderboard in one process and over two worker processes, alternately
    t_board: dict[int, list[float]] = {1: [], 2: []}
    for workers in (2, 1, 2, 1):
        t0 = time.perf_counter()
        result = build_leaderboard(table, LeaderboardSettings(BootstrapSettings(1000, 0.95, 0), workers=workers))
        t_board[workers].append(time.perf_counter() - t0)
        if workers == 1:
            board = result
        else:
            two = result
    pd.testing.assert_frame_equal(board.board, two.board, check_exact=True)  # the same figures either way

    prefs = preferences(table)
    difficulty = instruction_difficulty(prefs, exclude=set(board.summary["flagged"]))
    # one instruction order for every model and for the gamed rows, ours and AlpacaEval's
    # alike: the GLM's cross-validation folds are cut by row position
    order = sorted(difficulty.index)
    prefs = (prefs.assign(position=pd.Index(order).get_indexer(prefs["prompt"]))
             .sort_values(["model_2", "position"], kind="stable").drop(columns="position"))
    gamed, stand_in = gamed_stand_in(prefs)
    ours, seconds = {}, {}
    for glm, rows in (("length_controlled_noreg", None), ("length_controlled_v1", gamed)):
        for cv in ("liblinear", "exact"):
            t0 = time.perf_counter()
            fit = controlled_win_rates(prefs, difficulty, "lc", LCSettings(cv=cv), gamed=rows)[0].set_index("model")
            seconds[glm, cv] = time.perf_counter() - t0
            ours[glm, cv] = fit[["lc_win_rate"]]

    python = ensure_venv()
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "annotations").mkdir()
        for model, grp in table.groupby("model_2"):
            if model == grp["model_1"].iloc[0]:
                continue  # the baseline against itself: 50 by construction
            grp = grp.set_index("prompt").reindex(order).dropna(subset=["p_1"]).reset_index()
            if len(grp) != len(order):
                continue  # AlpacaEval maps difficulty by position: only complete files compare
            pd.DataFrame({"instruction": grp["prompt"], "output_1": grp["response_1"], "output_2": grp["response_2"],
                          "generator_1": grp["model_1"], "generator_2": model, "annotator": grp["judge"],
                          "preference": 2.0 - grp["p_1"]}).to_json(Path(work) / "annotations" / f"{model}.json")
        # df_gamed.csv as AlpacaEval reads it: the gamed rows (preference in [0, 1], the length
        # difference standardised over those rows), the first 805 in instruction order, whose
        # difficulty AlpacaEval looks up by position
        delta = (gamed["len_1"] - gamed["len_2"]).astype(float)
        rows = pd.DataFrame({"model": "stand-in", "prompt": gamed["prompt"], "preference": gamed["q"],
                             "std_delta_len": delta / delta.std(), "not_gamed_baseline": False})
        rows["index"] = pd.Index(order).get_indexer(rows["prompt"])
        rows["block"] = pd.factorize(gamed["variant"])[0]  # verbose first, then concise
        rows = rows.sort_values(["block", "index"]).drop(columns="block").reset_index(drop=True)
        rows["instruction_difficulty"] = difficulty.reindex(rows["prompt"]).to_numpy()
        first = rows.iloc[:len(order)]
        assert (first["index"].to_numpy() == np.arange(len(order))).all(), "the first block must be in order"
        rows.drop(columns="prompt").to_csv(Path(work) / "df_gamed.csv", index=False)
        done = subprocess.run([str(python), "-c", CHILD, work], capture_output=True, text=True, check=True)
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"gamed baselines stood in for by {stand_in}'s verbose and concise variants")
    for (glm, cv), fit in ours.items():
        side = fit["lc_win_rate"].rename("judgeaudit").to_frame().join(
            pd.Series({m: v[glm] for m, v in theirs["models"].items()}, name="alpaca_eval"), how="inner")
        side["diff"] = side["judgeaudit"] - side["alpaca_eval"]
        far = side[side["diff"].abs() > 0.01].sort_values("diff", key=abs, ascending=False)
        print(f"\n{glm}, judgeaudit cv={cv}, same difficulty and gamed rows, {len(side)} models: max |diff| "
              f"{side['diff'].abs().max():.4f} points; within 0.01: {len(side) - len(far)} of {len(side)}"
              + (f"; beyond: {', '.join(f'{m} {d:+.3f}' for m, d in far['diff'].items())}" if len(far) else ""))
        print(f"LC fits: judgeaudit {seconds[glm, cv]:.2f} s, AlpacaEval {theirs['seconds'][glm]:.2f} s "
              f"(ratio {theirs['seconds'][glm] / seconds[glm, cv]:.2f}x)")
    one, two = min(t_board[1]), min(t_board[2])
    print(f"whole leaderboard (raw, LC, style control, Bradley-Terry 1,000 resamples, flags), "
          f"{len(board.board)} models, best of 2: {one:.1f} s in one process, {two:.1f} s with two workers "
          f"({one / two:.2f}x; the same board)")


if __name__ == "__main__":
    main()
