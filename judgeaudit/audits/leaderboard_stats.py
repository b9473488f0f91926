"""What a leaderboard's numbers support: Bradley-Terry scores against the baseline with
bootstrap CIs (instructions resampled jointly for every model), separability (the share of
model pairs whose CIs do not overlap, after Arena-Hard), rank shifts between raw and
controlled rates, and the spread of a base model's length-gamed variants.

With one baseline, the Bradley-Terry strength of model m is the log-odds of its win rate
against the baseline, reported on the Elo scale: 1000 + 400 log10(W / (1 - W)); the
baseline sits at 1000.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import BootstrapSettings


def elo(win_rate: np.ndarray) -> np.ndarray:
    w = np.clip(np.asarray(win_rate, float), 1e-4, 1 - 1e-4)
    return 1000 + 400 * np.log10(w / (1 - w))


def _matrix(values: pd.DataFrame, column: str) -> pd.DataFrame:
    return values.pivot_table(index="model", columns="prompt", values=column, aggfunc="first")


def bootstrap_rates(values: pd.DataFrame, column: str, settings: BootstrapSettings) -> pd.DataFrame:
    """Per model: mean of ``column`` over instructions (x 100), its percentile CI and the
    Bradley-Terry (Elo-scale) score with its CI, instructions resampled jointly."""
    mat = _matrix(values, column)
    arr = mat.to_numpy(float)
    rng = np.random.default_rng(settings.seed)
    idx = rng.integers(0, arr.shape[1], size=(settings.n_boot, arr.shape[1]))
    boot = np.stack([np.nanmean(arr[:, i], axis=1) for i in idx], axis=1)  # models x resamples
    alpha = (1 - settings.confidence) / 2
    point = np.nanmean(arr, axis=1)
    lo, hi = np.nanquantile(boot, alpha, axis=1), np.nanquantile(boot, 1 - alpha, axis=1)
    return pd.DataFrame({"model": mat.index, "rate": point * 100, "ci_low": lo * 100, "ci_high": hi * 100,
                         "bt_score": elo(point), "bt_ci_low": elo(lo), "bt_ci_high": elo(hi)})


def separability(ci: pd.DataFrame, low: str = "bt_ci_low", high: str = "bt_ci_high") -> float:
    """Share of model pairs whose confidence intervals do not overlap."""
    pairs = list(itertools.combinations(ci[[low, high]].to_numpy(), 2))
    if not pairs:
        return float("nan")
    apart = sum(a[1] < b[0] or b[1] < a[0] for a, b in pairs)
    return apart / len(pairs)


def rank_shifts(board: pd.DataFrame, columns: tuple[str, ...] = ("win_rate", "lc_win_rate", "sc_win_rate")
                ) -> pd.DataFrame:
    """Each model's rank under each rate (1 = best), and its moves from the raw rank."""
    out = board[["model"]].copy()
    for col in columns:
        out[f"rank_{col}"] = board[col].rank(ascending=False, method="min").astype(int)
    for col in columns[1:]:
        out[f"shift_{col}"] = out[f"rank_{columns[0]}"] - out[f"rank_{col}"]
    return out


def variant_families(models: list[str], suffixes: tuple[str, ...] = ("_concise", "_verbose")) -> dict[str, list[str]]:
    """Base model -> its present variants (the base itself where present)."""
    families: dict[str, list[str]] = {}
    for m in models:
        base = next((m[: -len(s)] for s in suffixes if m.endswith(s)), None)
        if base is not None:
            families.setdefault(base, [])
            families[base].append(m)
    for base in families:
        if base in models:
            families[base].insert(0, base)
    return families


def gameability(values: pd.DataFrame, rate_columns: dict[str, str], settings: BootstrapSettings) -> pd.DataFrame:
    """Per base model and rate: the spread (max - min, points) across its length variants,
    with a bootstrap CI over instructions. ``values``: model, prompt and one column per
    rate (per-instruction preference, or the controlled GLM's prediction)."""
    families = variant_families(sorted(values["model"].unique()))
    rng = np.random.default_rng(settings.seed)
    alpha = (1 - settings.confidence) / 2
    rows = []
    for base, members in families.items():
        for label, col in rate_columns.items():
            mat = _matrix(values[values["model"].isin(members)], col).reindex(members).to_numpy(float)
            idx = rng.integers(0, mat.shape[1], size=(settings.n_boot, mat.shape[1]))
            point = np.nanmean(mat, axis=1) * 100
            boot = np.stack([np.nanmean(mat[:, i], axis=1) for i in idx]) * 100
            spread = boot.max(axis=1) - boot.min(axis=1)
            one = len(members) < 2  # a concise-only entry: nothing here to compare it with
            rows.append({"base": base, "variants": ", ".join(members), "rate": label,
                         "spread": np.nan if one else float(point.max() - point.min()),
                         "ci_low": np.nan if one else float(np.quantile(spread, alpha)),
                         "ci_high": np.nan if one else float(np.quantile(spread, 1 - alpha)),
                         "n_variants": len(members)})
    return pd.DataFrame(rows)
