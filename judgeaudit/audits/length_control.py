"""Length- and style-controlled win rates, after AlpacaEval's length-controlled GLM.

Per judge, one logistic GLM over all its comparisons (fractional outcome: the first
student's score, both orders averaged):

    logit P(first wins) = theta_cell + beta * tanh(dlen / sd) + sum_k gamma_k * tanh(dstyle_k / sd_k)

The controlled win rate of a cell is sigmoid(theta_cell): the win rate the judge would
give were the two responses equally long (and, for "length+style", equally formatted).
With the length feature only this is AlpacaEval's LC win rate (its per-instruction
term has no counterpart here: both students answer every prompt). CIs: prompts are
resampled jointly across cells and the GLM refit; a resample is a row of weights (how
often each comparison was drawn), and the GLM with all its resamples is solved at once
(``audits.l2_logistic``).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd


STYLE = {"markdown": re.compile(r"\*\*|^#+ |^\s*[-*] |^\s*\d+\. ", re.M), "exclaim": re.compile(r"!"),
         "lines": re.compile(r"\n")}
CONTROLS = {"length": ("length",), "length+style": ("length", *STYLE)}


def features(text: str) -> dict[str, float]:
    """Length in words and the style counts of one response."""
    return {"length": float(len(text.split())), **{k: float(len(p.findall(text))) for k, p in STYLE.items()}}


C = 100.0  # the GLM's inverse L2 penalty (scikit-learn's C): close to unpenalised, finite where a cell is one-sided


def _design(frame: pd.DataFrame, cells: list, controls: tuple[str, ...], weights: np.ndarray) -> np.ndarray:
    """(resamples, rows, cells + controls): each cell's indicator, then each control's
    tanh(d / sd), with sd the standard deviation of d in that resample (``weights``:
    (resamples, rows), how often each row was drawn)."""
    index = {c: k for k, c in enumerate(cells)}
    onehot = np.zeros((len(frame), len(cells)))
    onehot[np.arange(len(frame)), [index[c] for c in frame["cell"]]] = 1.0
    cols = []
    for c in controls:
        d = frame[f"d_{c}"].to_numpy()
        total = weights.sum(1, keepdims=True)
        mean = (weights * d).sum(1, keepdims=True) / total
        sd = np.sqrt((weights * (d - mean) ** 2).sum(1, keepdims=True) / total)
        cols.append(np.tanh(d / np.where(sd > 0, sd, 1.0)))
    onehot = np.broadcast_to(onehot, (len(weights), *onehot.shape))
    return np.concatenate([onehot, *(col[..., None] for col in cols)], axis=-1)


def _fit(frame: pd.DataFrame, cells: list, controls: tuple[str, ...], weights: np.ndarray) -> np.ndarray:
    """Coefficients (resamples, cell intercepts then control slopes), one row per row of
    ``weights``; the fractional outcome as two weighted rows, as scikit-learn is given it."""
    from judgeaudit.audits.l2_logistic import fit_l2_logistic  # torch: only where a fit runs

    y = frame["score"].to_numpy()
    return fit_l2_logistic(_design(frame, cells, controls, weights), weights * (y + 1e-9),
                           weights * (1 - y + 1e-9), C)


def controlled_win_rates(scores: pd.DataFrame, *, n_boot: int, confidence: float, seed: int,
                         cell_cols: list[str]) -> pd.DataFrame:
    """Raw and controlled win rates per judge and cell, each with its CI; ``scores`` holds
    judge, prompt_id, the ``cell_cols``, score and d_<feature> (first minus second response)."""
    rows = []
    alpha = (1 - confidence) / 2
    for judge, g in scores.groupby("judge", sort=True):
        g = g.assign(cell=list(zip(*(g[c] for c in cell_cols))))
        cells = sorted(set(g["cell"]))
        prompts = np.array(sorted(set(g["prompt_id"])))
        rng = np.random.default_rng(seed)
        draws = [np.searchsorted(prompts, rng.choice(prompts, size=len(prompts))) for _ in range(n_boot)]
        counts = np.stack([np.bincount(d, minlength=len(prompts)) for d in draws]).astype(float)
        # row 0: the data as observed; rows 1..n_boot: the resamples
        weights = np.vstack([np.ones(len(g)), counts[:, np.searchsorted(prompts, g["prompt_id"].to_numpy())]])
        n = g.groupby("cell")["prompt_id"].nunique()
        in_cell = np.array([[c == cell for c in g["cell"]] for cell in cells], dtype=float)  # (cells, rows)
        with np.errstate(invalid="ignore", divide="ignore"):  # a cell no resample drew: nan
            raw = (weights * g["score"].to_numpy()) @ in_cell.T / (weights @ in_cell.T)
        estimates = {"raw": (raw[0], raw[1:])}
        slopes = {}
        for name, controls in CONTROLS.items():
            coef = _fit(g, cells, controls, weights)
            controlled = 1 / (1 + np.exp(-coef[:, :len(cells)]))
            estimates[name] = (controlled[0], controlled[1:])
            slopes[name] = (coef[0, len(cells)], np.quantile(coef[1:, len(cells)], [alpha, 1 - alpha]))
        for k, cell in enumerate(cells):
            for control, (point, boot) in estimates.items():
                low, high = np.nanquantile(boot[:, k], [alpha, 1 - alpha])
                rows.append(dict(judge=judge, **dict(zip(cell_cols, cell)), control=control,
                                 estimate=float(point[k]), ci_low=float(min(low, point[k])),
                                 ci_high=float(max(high, point[k])), n=int(n[cell]), confidence=confidence,
                                 length_slope=float(slopes[control][0]) if control != "raw" else np.nan,
                                 slope_ci_low=float(slopes[control][1][0]) if control != "raw" else np.nan,
                                 slope_ci_high=float(slopes[control][1][1]) if control != "raw" else np.nan))
    return pd.DataFrame(rows)


def with_differences(scores: pd.DataFrame, pairs: pd.DataFrame, cell_cols: list[str]) -> pd.DataFrame:
    """``scores`` (one row per judge, cell and prompt) with d_<feature>: the features of
    the pair's response_a minus those of its response_b."""
    fa = pd.DataFrame([features(r) for r in pairs["response_a"]])
    fb = pd.DataFrame([features(r) for r in pairs["response_b"]])
    diffs = (fa - fb).add_prefix("d_")
    keyed = pd.concat([pairs[[*cell_cols, "prompt_id"]].reset_index(drop=True), diffs], axis=1)
    out = scores.merge(keyed, on=[*cell_cols, "prompt_id"], how="left", validate="many_to_one")
    if out[diffs.columns].isna().any().any():
        raise ValueError("some judged comparisons have no responses to measure")
    return out


def gameability(clean: pd.DataFrame, attacked: pd.DataFrame, *, n_boot: int, confidence: float,
                seed: int, cell_cols: list[str]) -> pd.DataFrame:
    """Per judge and control: the mean absolute change of the cells' win rates when one
    side's responses are lengthened, with a bootstrap CI over cells (n = cells). A
    debiased win rate should move less than the raw one."""
    from judgeaudit.audits.stats import mean_ci

    keys = ["judge", *cell_cols, "control"]
    both = clean.merge(attacked, on=keys, suffixes=("", "_attacked"))
    rows = []
    for (judge, control), g in both.groupby(["judge", "control"], sort=True):
        est = mean_ci((g.estimate_attacked - g.estimate).abs().to_numpy(), n_boot=n_boot, confidence=confidence,
                      seed=seed)
        rows.append({"judge": judge, "control": control, "mean_abs_change": est.estimate, "ci_low": est.ci_low,
                     "ci_high": est.ci_high, "n": est.n})
    return pd.DataFrame(rows)


def controlled_summary(table: pd.DataFrame) -> list[dict]:
    """Per judge and control: the fitted length slope with its CI (0: the judge ignores
    length; > 0: it prefers the longer response), and the number of cells."""
    out = []
    for (judge, control), g in table[table.control != "raw"].groupby(["judge", "control"], sort=True):
        row = g.iloc[0]
        out.append({"judge": judge, "control": control, "length_slope": float(row.length_slope),
                    "ci_low": float(row.slope_ci_low), "ci_high": float(row.slope_ci_high),
                    "cells": int(len(g)), "n_prompts": int(g.n.max())})
    return out
