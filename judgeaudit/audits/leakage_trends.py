"""PLS across conditions (the share of a generator's data in the students' training
mixture, or the students' size) with one joint bootstrap over eval prompts, so the
trend's slope gets a CI as well as each point.

A condition's PLS is the same-tier PLS of the leakage audit (audits/leakage.py): per cell
(student base, generator pair) the head-to-head PLS of the two related judges' scores,
averaged over cells. Resampling the prompts once for every condition keeps the points of
one replicate paired, as they are: the same prompts, answered by every condition's students.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.leakage import CELL, pls_from_head_to_head
from judgeaudit.audits.stats import BootstrapSettings


def cell_arrays(scores: pd.DataFrame, roster: list[dict]) -> tuple[np.ndarray, list[str]]:
    """(2 x cells, prompts) scores: for each cell, its generator_a's related judge's scores
    then generator_b's, on the prompts every cell shares (sorted)."""
    related = {r["related_generator"]: r["judge"] for r in roster if r["related_generator"]}
    rows, prompts = [], None
    for cell, grp in scores.groupby(CELL, sort=True):
        ji, jj = related.get(cell[2]), related.get(cell[3])
        if ji is None or jj is None:
            continue
        wide = grp.pivot_table(index="prompt_id", columns="judge", values="score", aggfunc="first")
        if ji not in wide or jj not in wide:
            continue
        pair = wide[[ji, jj]].dropna()
        prompts = pair.index if prompts is None else prompts.intersection(pair.index)
        rows.append(pair)
    if not rows:
        raise ValueError("no cell has both related judges' scores")
    return np.vstack([r.loc[prompts].to_numpy().T for r in rows]), list(prompts)


def _pls(arrays: np.ndarray) -> np.ndarray:
    """arrays (2 x cells, ..., prompts) -> PLS averaged over cells, per leading replicate."""
    means = arrays.mean(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nanmean(pls_from_head_to_head(means[0::2], means[1::2]), axis=0)


def trend(conditions: dict[float, np.ndarray], settings: BootstrapSettings) -> tuple[pd.DataFrame, dict]:
    """PLS per condition with CIs, and the least-squares line of PLS on the condition value:
    slope with its CI and R^2, all from one joint bootstrap over the shared prompts."""
    xs = np.array(sorted(conditions), dtype=float)
    n = {arr.shape[1] for arr in conditions.values()}
    if len(n) != 1:
        raise ValueError(f"the conditions were judged on different numbers of prompts: {sorted(n)}")
    n_prompts = n.pop()
    rng = np.random.default_rng(settings.seed)
    idx = rng.integers(0, n_prompts, size=(settings.n_boot, n_prompts))
    point = np.array([_pls(conditions[x]) for x in xs])
    boot = np.stack([_pls(conditions[x][:, idx]) for x in xs])  # conditions x replicates
    alpha = (1 - settings.confidence) / 2
    lo, hi = np.nanquantile(boot, alpha, axis=1), np.nanquantile(boot, 1 - alpha, axis=1)
    table = pd.DataFrame({"condition": xs, "estimate": point, "ci_low": np.minimum(lo, point),
                          "ci_high": np.maximum(hi, point), "n": n_prompts, "confidence": settings.confidence})
    slope, intercept = np.polyfit(xs, point, 1)
    fitted = slope * xs + intercept
    ss_tot = float(((point - point.mean()) ** 2).sum())
    r2 = 1 - float(((point - fitted) ** 2).sum()) / ss_tot if ss_tot > 0 else None  # flat: no fit to judge
    slopes = np.polyfit(xs, np.nan_to_num(boot), 1)[0]
    s_lo, s_hi = np.quantile(slopes, [alpha, 1 - alpha])
    fit = {"slope": float(slope), "slope_ci_low": float(min(s_lo, slope)), "slope_ci_high": float(max(s_hi, slope)),
           "intercept": float(intercept), "r2": r2, "n_prompts": int(n_prompts), "n_boot": settings.n_boot,
           "confidence": settings.confidence}
    return table, fit
