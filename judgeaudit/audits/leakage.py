"""Preference Leakage: win rates WR(i, j) and the Preference Leakage Score.

PLS(i,j) = 1/2 [ (WR(i,i) - AVG(i,j)) / AVG(i,j) + (WR(j,j) - AVG(j,i)) / AVG(j,i) ],
AVG(i,j) = (WR(i,i) + WR(i,j)) / 2, where WR(i,j) is the win rate of the student
trained on generator i's data, in its head-to-head against generator j's student,
as judged by the judge related to generator j.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import Estimate, paired_bootstrap
from judgeaudit.generation.corpus import task_type
from judgeaudit.judging.pairwise import order_score

CELL = ["method", "student_base", "generator_a", "generator_b"]


def pls(wr_ii: np.ndarray | float, wr_ij: np.ndarray | float, wr_jj: np.ndarray | float,
        wr_ji: np.ndarray | float) -> np.ndarray | float:
    """The Preference Leakage Score from the four win rates (element-wise)."""
    return 0.5 * (_relative_excess(wr_ii, wr_ij) + _relative_excess(wr_jj, wr_ji))


def _relative_excess(own: np.ndarray | float, other: np.ndarray | float) -> np.ndarray | float:
    """(own - AVG) / AVG with AVG = (own + other) / 2; 0 where both win rates are 0
    (no judge gives the student anything, so there is nothing to favour)."""
    own, other = np.asarray(own, dtype=float), np.asarray(other, dtype=float)
    avg = (own + other) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(avg > 0, (own - avg) / np.where(avg > 0, avg, 1.0), 0.0)
    return out if out.ndim else float(out)


def pls_from_head_to_head(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray | float:
    """PLS for one head-to-head: ``a`` = win rate of i's student under judge i, ``b`` =
    under judge j. Then WR(i,i)=a, WR(i,j)=b, WR(j,j)=1-b, WR(j,i)=1-a."""
    return pls(a, b, 1 - np.asarray(b), 1 - np.asarray(a))


def pair_scores(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge, cell, prompt): the canonical first student's score, both
    presentation orders averaged (position swap)."""
    frame = judgments.assign(score=[order_score(v, o) for v, o in
                                    zip(judgments["verdict"], judgments["order"])])
    keys = ["judge", *CELL, "prompt_id"]
    counts = frame.groupby(keys)["order"].nunique()
    if (counts != 2).any():
        bad = counts[counts != 2].reset_index().head(3).to_dict("records")
        raise ValueError(f"judgments lack one presentation order for {int((counts != 2).sum())} "
                         f"comparison(s), e.g. {bad}")
    # an unparseable order (nan) leaves the other; a comparison with neither is left out
    # of the scores, and counted in the judgments table and the audit summary
    return frame.groupby(keys, as_index=False)["score"].mean().dropna(subset=["score"])


def _scores(scores: pd.DataFrame, judge: str, cell: tuple) -> pd.Series:
    mask = (scores["judge"] == judge) & np.logical_and.reduce(
        [scores[c] == v for c, v in zip(CELL, cell)])
    return scores[mask].set_index("prompt_id")["score"].sort_index()


def win_rates(scores: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """WR of generator_a's student against generator_b's, per judge and cell, with CIs;
    both directions are listed (the second as 1 - the first)."""
    rows = []
    for (judge, *cell), grp in scores.groupby(["judge", *CELL], sort=True):
        est = paired_bootstrap(lambda x, axis: np.mean(x, axis=axis), [grp["score"].to_numpy()],
                               n_boot=n_boot, confidence=confidence, seed=seed)
        method, base, ga, gb = cell
        rows.append(dict(metric="win_rate", judge=judge, method=method, student_base=base,
                         student_generator=ga, opponent_generator=gb, **est.as_dict()))
        rows.append(dict(metric="win_rate", judge=judge, method=method, student_base=base,
                         student_generator=gb, opponent_generator=ga, estimate=1 - est.estimate,
                         ci_low=1 - est.ci_high, ci_high=1 - est.ci_low, n=est.n,
                         confidence=confidence))
    return pd.DataFrame(rows)


def _pls_stat(*arrays: np.ndarray, axis: int = -1) -> np.ndarray:
    """Mean PLS over cells; arrays alternate (scores under judge i, under judge j)."""
    values = [pls_from_head_to_head(np.mean(a, axis=axis), np.mean(b, axis=axis))
              for a, b in zip(arrays[::2], arrays[1::2])]
    return np.nanmean(np.stack(values), axis=0)


def leakage_scores(scores: pd.DataFrame, roster: list[dict], *, n_boot: int, confidence: float,
                   seed: int) -> pd.DataFrame:
    """PLS per (tier, method, student base, generator pair), and per (tier, method) and
    per tier averaged over pairs and bases, each with a prompt-level paired bootstrap CI."""
    related = {(r["related_generator"], r["tier"]): r["judge"] for r in roster
               if r["related_generator"] is not None}
    tiers = sorted({r["tier"] for r in roster if r["related_generator"] is not None})
    cells = sorted({tuple(c) for c in scores[CELL].drop_duplicates().itertuples(index=False)})
    rows, pooled = [], {}
    for tier, cell in itertools.product(tiers, cells):
        method, base, gi, gj = cell
        ji, jj = related.get((gi, tier)), related.get((gj, tier))
        if ji is None or jj is None:
            continue
        a, b = _scores(scores, ji, cell), _scores(scores, jj, cell)
        a, b = a.align(b, join="inner")
        est = paired_bootstrap(_pls_stat, [a.to_numpy(), b.to_numpy()], n_boot=n_boot,
                               confidence=confidence, seed=seed)
        rows.append(dict(metric="pls", scope="pair", tier=tier, method=method, student_base=base,
                         generator_i=gi, generator_j=gj, judge_i=ji, judge_j=jj,
                         wr_ii=float(a.mean()), wr_ij=float(b.mean()), **est.as_dict()))
        for key in ((tier, method), (tier, "all")):
            pooled.setdefault(key, []).extend([a.to_numpy(), b.to_numpy()])
    for (tier, method), arrays in sorted(pooled.items()):
        est = _pooled_estimate(arrays, n_boot=n_boot, confidence=confidence, seed=seed)
        rows.append(dict(metric="pls", scope="method" if method != "all" else "tier", tier=tier,
                         method=method, **est.as_dict()))
    return pd.DataFrame(rows)


def leakage_by_task(scores: pd.DataFrame, categories: pd.Series, roster: list[dict], *, n_boot: int,
                    confidence: float, seed: int) -> pd.DataFrame:
    """PLS per tier on the prompts of each category and of each task type (objective: a
    checkable answer; subjective: open, free in style); ``categories``: prompt_id -> category."""
    groups = {("category", c): categories.index[categories == c] for c in sorted(categories.unique())}
    types = categories.map(task_type)
    groups |= {("task_type", t): types.index[types == t] for t in sorted(types.unique())}
    frames = []
    for (scope, group), ids in groups.items():
        subset = scores[scores.prompt_id.isin(ids)]
        if subset.empty:
            continue
        tiers = leakage_scores(subset, roster, n_boot=n_boot, confidence=confidence, seed=seed)
        frames.append(tiers[tiers.scope == "tier"].assign(scope=scope, group=group))
    cols = ["scope", "group", "tier", "estimate", "ci_low", "ci_high", "n", "confidence"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def _pooled_estimate(arrays: list[np.ndarray], **kw) -> Estimate:
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:  # cells judged on different prompt sets cannot be paired
        raise ValueError(f"cells have different numbers of judged prompts: {sorted(lengths)}")
    return paired_bootstrap(_pls_stat, arrays, **kw)
