"""Self-preference of real judges from published leaderboards of the same models under
several judges (AlpacaEval 2.0: GPT-4 Turbo, Claude 3 Opus, Mistral Large, one baseline).

For judge j and a model m of j's family (its own model, or a sibling), against the other
judges k:
- delta_points: W_j(m) - mean_k W_k(m), the plain gap in win rate (points);
- delta_logit: mean_k [(L_j(m) - L_k(m)) - mean_{m'} (L_j(m') - L_k(m'))], with L the
  log-odds of the win rate and m' the models related to neither j nor k: the gap beyond
  j's general leniency towards k, measured where neither judge has a stake (a double
  difference; exp of it is an odds ratio);
- rank_shift: mean_k rank_k(m) - rank_j(m), places gained under its own judge.

The boards are aggregates, so nothing can be resampled. Each rate W, a mean of a per-
instruction score in [0, 1] over n instructions, has variance at most W(1 - W)/n (the
largest any [0, 1] variable with mean W has; ties and log-prob weights only shrink it), so
the parametric bootstrap here redraws every rate as Binomial(n, W)/n, independently across
judges. n is what the rate implies where it is a count (the largest n <= the number of
instructions with 2nW whole: AlpacaEval counts ties as half) and the number of instructions
otherwise. Independence is conservative for the gaps between judges of the same outputs,
whose errors are positively correlated; where a leaderboard's per-item annotations are
at hand, ``bound_check`` compares the bound with the measured standard errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgeaudit.audits.stats import BootstrapSettings

METRICS = {"raw": "win_rate", "lc": "lc_win_rate"}


@dataclass(frozen=True)
class SelfPreferenceSettings:
    n_instructions: int = 805
    bootstrap: BootstrapSettings = BootstrapSettings(n_boot=2000)


def implied_n(rate_pct: float, n_max: int) -> tuple[int, bool]:
    """The count of annotations a win rate implies (ties count half), and whether it was implied."""
    p = rate_pct / 100
    for n in range(n_max, n_max // 2, -1):
        x = 2 * p * n
        if abs(x - round(x)) < 1e-8:  # published rates carry ~15 digits: a count is exact
            return n, True
    return n_max, False


def judge_table(boards: dict[str, pd.DataFrame], own: dict[str, str], families: dict[str, str],
                n_instructions: int) -> tuple[pd.DataFrame, str]:
    """The boards as one long table (judge, model, family, rates, n, SE bounds) and the baseline."""
    rows = []
    for judge, board in boards.items():
        for r in board.itertuples():
            n, implied = implied_n(r.win_rate, n_instructions)
            rows.append({"judge": judge, "judge_model": own[judge], "judge_family": families.get(own[judge]),
                         "model": r.model, "name": r.name, "family": families.get(r.model),
                         "win_rate": r.win_rate, "lc_win_rate": r.lc_win_rate, "avg_length": r.avg_length,
                         "n": n, "n_implied": implied})
    table = pd.DataFrame(rows)
    at_half = table[(table.win_rate == 50) & (table.lc_win_rate == 50)].groupby("model").judge.nunique()
    baseline = at_half[at_half == len(boards)].index.tolist()
    if len(baseline) != 1:
        raise ValueError(f"the boards share no single baseline at 50%: candidates {baseline}")
    models = [set(b.model) for b in boards.values()]
    if any(m != models[0] for m in models):
        raise ValueError(f"the boards rank different models: {[sorted(m) for m in models]}")
    for metric in METRICS.values():
        p = table[metric] / 100
        table[f"{metric}_se_bound"] = 100 * np.sqrt(p * (1 - p) / table.n)
    return table.sort_values(["judge", "win_rate"], ascending=[True, False], ignore_index=True), baseline[0]


def _ranks(rates: np.ndarray) -> np.ndarray:
    """Rank (1 = best) along the last axis; ties share the better rank's order by position."""
    order = np.argsort(-rates, axis=-1, kind="stable")
    return np.argsort(order, axis=-1, kind="stable") + 1


def _statistics(rates: np.ndarray, judges: list[str], models: list[str], fam_j: list[set[str]],
                targets: list[tuple[int, int]]) -> np.ndarray:
    """rates: (draws, judges, models) in [0, 1] -> (draws, targets, 3): delta_points, delta_logit, rank_shift."""
    logit = np.log(np.clip(rates, 1e-4, 1 - 1e-4) / (1 - np.clip(rates, 1e-4, 1 - 1e-4)))
    ranks = _ranks(rates)
    out = np.full(rates.shape[:1] + (len(targets), 3), np.nan)
    for t, (j, m) in enumerate(targets):
        others = [k for k in range(len(judges)) if k != j]
        out[:, t, 0] = 100 * (rates[:, j, m] - rates[:, others, m].mean(axis=1))
        gaps = []
        for k in others:
            neutral = [i for i, name in enumerate(models) if name not in fam_j[j] | fam_j[k]]
            if neutral:
                lenient = (logit[:, j, neutral] - logit[:, k, neutral]).mean(axis=1)
                gaps.append(logit[:, j, m] - logit[:, k, m] - lenient)
        if gaps:
            out[:, t, 1] = np.mean(gaps, axis=0)
        out[:, t, 2] = ranks[:, others, m].mean(axis=1) - ranks[:, j, m]
    return out


def self_preference(table: pd.DataFrame, baseline: str, settings: SelfPreferenceSettings
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per judge, metric (raw, lc) and model of the judge's family: the gaps with CIs; and
    every judge's ranks of every model with their CIs."""
    judges = sorted(table.judge.unique())
    models = sorted(set(table.model) - {baseline})
    fam = dict(zip(table.model, table.family))
    own = dict(zip(table.judge, table.judge_model))
    jfam = dict(zip(table.judge, table.judge_family))
    fam_j = [{m for m in models if m == own[j] or (fam[m] is not None and fam[m] == jfam[j])} for j in judges]
    targets = [(j, models.index(m)) for j in range(len(judges)) for m in sorted(fam_j[j])]
    b = settings.bootstrap
    rng = np.random.default_rng(b.seed)
    alpha = (1 - b.confidence) / 2
    cell = table.set_index(["judge", "model"])
    n = np.array([[cell.loc[(j, m), "n"] for m in models] for j in judges])
    rows, rank_rows = [], []
    for metric, column in METRICS.items():
        point = np.array([[cell.loc[(j, m), column] / 100 for m in models] for j in judges])
        draws = rng.binomial(np.broadcast_to(n, (b.n_boot,) + n.shape), point) / n
        est = _statistics(point[None], judges, models, fam_j, targets)[0]
        dist = _statistics(draws, judges, models, fam_j, targets)
        lo, hi = np.nanquantile(dist, alpha, axis=0), np.nanquantile(dist, 1 - alpha, axis=0)
        ranks, rank_draws = _ranks(point), _ranks(draws)
        for t, (j, m) in enumerate(targets):
            others = [k for k in range(len(judges)) if k != j]
            rows.append({"judge": judges[j], "metric": metric, "model": models[m],
                         "relation": "self" if models[m] == own[judges[j]] else "family",
                         "rate_own_judge": 100 * point[j, m], "rate_other_judges": 100 * point[others, m].mean(),
                         "rank_own_judge": int(ranks[j, m]), "rank_other_judges": float(ranks[others, m].mean()),
                         **{f"{name}{suffix}": v[t, i] for i, name in enumerate(("delta_points", "delta_logit",
                                                                                  "rank_shift"))
                            for suffix, v in (("", est), ("_ci_low", lo), ("_ci_high", hi))},
                         "n": int(n[j, m]), "n_boot": b.n_boot, "confidence": b.confidence})
        for j, judge in enumerate(judges):
            for m, model in enumerate(models):
                q = np.quantile(rank_draws[:, j, m], [alpha, 1 - alpha])
                rank_rows.append({"judge": judge, "metric": metric, "model": model, "rate": 100 * point[j, m],
                                  "rank": int(ranks[j, m]), "rank_ci_low": int(q[0]), "rank_ci_high": int(q[1]),
                                  "own_family": model in fam_j[j]})
    result = pd.DataFrame(rows)
    result["odds_ratio"] = np.exp(result.delta_logit)
    return result, pd.DataFrame(rank_rows)


def bound_check(measured: pd.DataFrame, n_instructions: int) -> dict:
    """On a leaderboard with per-item annotations: the measured standard errors against the
    binomial bound at each model's rate (the ratio must stay at or below 1)."""
    def ratio(rate: pd.Series, se: pd.Series, n: pd.Series) -> pd.Series:
        p = rate / 100
        bound = 100 * np.sqrt(p * (1 - p) / n)
        return (se / bound)[bound > 0]

    m = measured[measured.n > 0]
    raw = ratio(m.win_rate, m.win_rate_se, m.n)
    lc = ratio(m.lc_win_rate, m.lc_se, m.n)
    return {"models": int(len(raw)), "max_raw_se_over_bound": float(raw.max()),
            "median_raw_se_over_bound": float(raw.median()), "max_lc_se_over_bound": float(lc.max()),
            "median_lc_se_over_bound": float(lc.median())}


def published_check(table: pd.DataFrame, judge: str, measured: pd.DataFrame) -> pd.DataFrame:
    """A judge's published rows beside the rates recomputed from its per-item annotations."""
    mine = table[table.judge == judge][["model", "win_rate", "lc_win_rate"]]
    both = mine.merge(measured[["model", "win_rate", "lc_win_rate"]], on="model", suffixes=("_published", "_ours"))
    both["win_rate_gap"] = both.win_rate_ours - both.win_rate_published
    both["lc_gap"] = both.lc_win_rate_ours - both.lc_win_rate_published
    return both
