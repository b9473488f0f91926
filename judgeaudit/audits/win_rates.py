"""Leaderboard win rates against one baseline, after AlpacaEval 2.0.

Per model m, on instructions x: preference q = P(m's output beats the baseline's) in
[0, 1] (a draw is 1/2). Raw win rate = 100 mean(q), standard error = 100 sem(q), as
AlpacaEval prints them.

Length-controlled win rate (AlpacaEval's ``length_controlled_v1``): per model, a logistic
GLM logit q = a tanh(dlen / sd(dlen)) + b g_x + c, dlen = len(baseline) - len(model)
(characters), g_x the instruction's difficulty, no intercept beyond c; L1 penalty, its
strength chosen by 5-fold cross-validation (folds by instruction) on the continuous
log-loss; LC = 100 mean_x sigmoid(b g_x + c) (the length term at zero), its SE = 100
sem over x. AlpacaEval takes g from a file it downloads at run time; here g is estimated
as AlpacaEval derived it, from every model's annotations: a joint logistic model logit
q = theta_m + g_x (models and instructions as fixed effects), g_x its instruction effect.
AlpacaEval also regularises each model's fit with the annotations of two length-gamed
variants of the baseline (its verbose and concise prompts against the baseline itself,
weight 0.1 each, no model term): the same model at other lengths pins the length slope to
what length alone does. Those annotations are not in the public files; ``gamed_stand_in``
builds the nearest thing the table holds: the strongest model that has both a verbose and
a concise variant, each variant set against that model itself through the common baseline
(its preference the difference of the two logits vs the baseline, its length difference
the two outputs' own).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from sklearn.linear_model import LogisticRegression

from judgeaudit.audits.liblinear_cv import CS, continuous_fit, liblinear_cv_losses
from judgeaudit.progress import Steps, done, each, plan


@dataclass(frozen=True)
class LCSettings:
    n_splits: int = 5
    seed: int = 123
    # how the penalty is cross-validated: "liblinear" fits every fold and C as AlpacaEval
    # does (its LC to the last digit); "exact" solves them all at once to the optimum,
    # about 10x faster, and can pick a neighbouring C where liblinear's tolerance decides
    # a near tie (LC within about 0.1 point of AlpacaEval's): bench/alpacaeval_lc.py
    cv: Literal["liblinear", "exact"] = "liblinear"


def preferences(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, instruction): q = 1 - p_1, the lengths and the instruction."""
    frame = table[["judge", "model_1", "model_2", "prompt", "response_1", "response_2", "p_1"]].copy()
    frame["q"] = 1.0 - frame["p_1"].astype(float)
    for side in ("1", "2"):
        text = frame[f"response_{side}"].fillna("")
        frame[f"len_{side}"] = text.str.len()
        for name, values in style_counts(text).items():
            frame[f"{name}_{side}"] = values
    return frame.drop(columns=["response_1", "response_2", "p_1"])


def raw_win_rates(prefs: pd.DataFrame) -> pd.DataFrame:
    """AlpacaEval's head-to-head figures per (judge, baseline, model)."""
    def describe(g: pd.DataFrame) -> pd.Series:
        q = g["q"]
        discrete = np.where(np.isclose(q, 0.5), 0.5, (q + 1).round() - 1)  # AlpacaEval's zero-one rounding
        return pd.Series({"n": len(q), "win_rate": q.mean() * 100, "win_rate_se": q.sem() * 100,
                          "n_wins": int((q > 0.5).sum()), "n_wins_base": int((q < 0.5).sum()),
                          "n_draws": int(np.isclose(q, 0.5).sum()), "discrete_win_rate": discrete.mean() * 100,
                          "avg_length": int(g["len_2"].mean())})
    out = prefs.groupby(["judge", "model_1", "model_2"], sort=True).apply(describe, include_groups=False)
    return out.reset_index().rename(columns={"model_1": "baseline", "model_2": "model"})


def instruction_difficulty(prefs: pd.DataFrame, exclude: set[str] = frozenset()) -> pd.Series:
    """g_x from a joint logistic model over every model's annotations (fixed effects for
    models and instructions, light L2), centred; indexed by instruction text."""
    from scipy import sparse

    data = prefs[~prefs["model_2"].isin(exclude) & (prefs["model_2"] != prefs["model_1"])]
    models = pd.Index(sorted(data["model_2"].unique()))
    instructions = pd.Index(sorted(data["prompt"].unique()))
    rows = np.arange(len(data))
    x_m = sparse.csr_matrix((np.ones(len(data)), (rows, models.get_indexer(data["model_2"]))),
                            shape=(len(data), len(models)))
    x_i = sparse.csr_matrix((np.ones(len(data)), (rows, instructions.get_indexer(data["prompt"]))),
                            shape=(len(data), len(instructions)))
    x = sparse.hstack([x_m, x_i]).tocsr()
    q = data["q"].to_numpy()
    fit = LogisticRegression(C=10.0, fit_intercept=False, max_iter=2000)
    # continuous targets: each row twice, as a win weighted q and a loss weighted 1 - q
    fit.fit(sparse.vstack([x, x]), np.r_[np.ones(len(q)), np.zeros(len(q))], sample_weight=np.r_[q, 1 - q])
    g = pd.Series(fit.coef_[0, len(models):], index=instructions)
    # instruction effect on the MODEL winning: higher = easier for the model; AlpacaEval's
    # difficulty is the baseline's side of it, so the sign is flipped
    return -(g - g.mean())


STYLE = {"header": r"(?m)^\s{0,3}#{1,6}\s", "bold": r"\*\*[^*\n]+\*\*|__[^_\n]+__",
         "list": r"(?m)^\s*(?:[-*+]|\d+[.)])\s"}  # markdown features, after Arena-Hard's style control
CONTROLS = {"lc": ("length",), "sc": ("length", "header", "bold", "list")}


def style_counts(texts: pd.Series) -> pd.DataFrame:
    """Markdown headers, bold spans and list items per text."""
    return pd.DataFrame({name: texts.str.count(pattern) for name, pattern in STYLE.items()})


def _control_columns(frame: pd.DataFrame, controls: tuple[str, ...], scale: dict[str, float]) -> np.ndarray:
    cols = []
    for name in controls:
        if name == "length":  # AlpacaEval: tanh of the standardised length difference
            cols.append(np.tanh((frame["len_1"] - frame["len_2"]).to_numpy(float) / scale[name]))
        else:  # Arena-Hard: the normalised count difference, standardised
            a, b = frame[f"{name}_1"].to_numpy(float), frame[f"{name}_2"].to_numpy(float)
            cols.append(((a - b) / (a + b + 1)) / scale[name])
    return np.column_stack(cols)


def _scales(frame: pd.DataFrame, controls: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for name in controls:
        if name == "length":
            diff = (frame["len_1"] - frame["len_2"]).to_numpy(float)
        else:
            a, b = frame[f"{name}_1"].to_numpy(float), frame[f"{name}_2"].to_numpy(float)
            diff = (a - b) / (a + b + 1)
        out[name] = float(np.std(diff, ddof=1)) or 1.0
    return out


def gamed_stand_in(prefs: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    """(rows standing in for the baseline's length-gamed variants, the base model used), or
    (None, None) when no model has both a ``_verbose`` and a ``_concise`` variant.

    Rows: per instruction and variant v of base model b, the pseudo-annotation "b against
    v": q = sigmoid(logit q_v - logit q_b) (both against the same baseline), len_1 = len(b's
    output), len_2 = len(v's output)."""
    models = set(prefs["model_2"])
    bases = [b for b in models if {f"{b}_verbose", f"{b}_concise"} <= models]
    if not bases:
        return None, None
    strength = prefs[prefs["model_2"].isin(bases)].groupby("model_2")["q"].mean()
    base = str(strength.idxmax())  # the closest to the baseline: the best stand-in for it
    own = prefs[prefs["model_2"] == base].set_index("prompt")
    rows = []
    for variant in (f"{base}_verbose", f"{base}_concise"):
        other = prefs[prefs["model_2"] == variant].set_index("prompt").reindex(own.index)
        lq = lambda q: logit(q.astype(float).clip(1e-6, 1 - 1e-6))  # noqa: E731
        rows.append(pd.DataFrame({"variant": variant, "prompt": own.index,
                                  "q": expit(lq(other["q"]) - lq(own["q"])).to_numpy(),
                                  "len_1": own["len_2"].to_numpy(), "len_2": other["len_2"].to_numpy()}))
    return pd.concat(rows, ignore_index=True).dropna().reset_index(drop=True), base


def _glm_design(part: pd.DataFrame, difficulty: Mapping[str, float], controls: tuple[str, ...],
                not_gamed: float) -> np.ndarray:
    """[controls, difficulty, model term] per row. AlpacaEval standardises the length
    difference within the model's rows and within the gamed baselines' rows separately
    (their table arrives standardised)."""
    return np.column_stack([_control_columns(part, controls, _scales(part, controls)),
                            _lookup(difficulty, part["prompt"]), np.full(len(part), not_gamed)])


def _lookup(table: Mapping[str, float], keys: pd.Series) -> np.ndarray:
    """table[keys], NaN where a key is missing (a dict lookup: pandas' reindex on text keys
    costs more than the GLM here)."""
    return np.fromiter((table.get(k, np.nan) for k in keys.to_numpy(object)), dtype=float, count=len(keys))


def _glm_rows(frame: pd.DataFrame, difficulty: Mapping[str, float], controls: tuple[str, ...],
              gamed: tuple[np.ndarray, np.ndarray, np.ndarray] | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(training design, targets, row weights, the model's own rows at no control difference)."""
    own = _glm_design(frame, difficulty, controls, 1.0)
    x, q, w = own, frame["q"].to_numpy(float), np.ones(len(frame))
    if gamed is not None:
        x, q, w = np.vstack([gamed[0], x]), np.r_[gamed[1], q], np.r_[gamed[2], w]
    test = own.copy()
    test[:, : len(controls)] = 0.0  # no difference in length (or style)
    return x, q, w, test


@functools.lru_cache(maxsize=32)
def _folds(n: int, n_splits: int) -> np.ndarray:
    """Each row's fold: AlpacaEval's ``GroupKFold`` with every row its own group (read-only)."""
    from sklearn.model_selection import GroupKFold

    folds = np.empty(n, dtype=int)
    for k, (_, held) in enumerate(GroupKFold(n_splits=n_splits).split(np.zeros(n), groups=np.arange(n))):
        folds[held] = k
    folds.flags.writeable = False
    return folds


def controlled_fits(frames: list[pd.DataFrame], difficulty: pd.Series, settings: LCSettings,
                    controls: tuple[str, ...] = ("length",), gamed: pd.DataFrame | None = None,
                    reg_lambda: float = 0.2, pool: Executor | None = None, steps: Steps | None = None
                    ) -> list[dict]:
    """The controlled win rate of each model (``frames``: each its rows of ``preferences``),
    and the GLM's per-instruction predictions at no difference in the controls.

    The penalty is chosen as AlpacaEval's ``LogisticRegressionCV`` chooses it (the grid CS,
    ``GroupKFold`` by row, the continuous log-loss): with ``settings.cv`` "liblinear" by its
    50 liblinear fits per model, with "exact" every model's folds and grid solved at once to
    the objective's optimum (``l1_logistic``). The refit at the chosen C is liblinear's,
    seeded as AlpacaEval's, either way. ``steps``: a step per model's cross-validation."""
    of = difficulty.to_dict()
    shared = None if gamed is None else (_glm_design(gamed, of, controls, 0.0), gamed["q"].to_numpy(float),
                                         np.full(len(gamed), reg_lambda / 2))
    rows = [_glm_rows(frame, of, controls, shared) for frame in frames]
    if not rows:
        return []
    n_max, d = max(len(r[1]) for r in rows), rows[0][0].shape[1]
    x, q, w = np.zeros((len(rows), n_max, d)), np.zeros((len(rows), n_max)), np.zeros((len(rows), n_max))
    folds = np.full((len(rows), n_max), -1)
    for k, (xk, qk, wk, _) in enumerate(rows):
        n = len(qk)
        x[k, :n], q[k, :n], w[k, :n] = xk, qk, wk
        folds[k, :n] = _folds(n, settings.n_splits)
    if settings.cv == "exact":
        from judgeaudit.audits.l1_logistic import cross_validated_losses  # torch: 2 s to import

        plan(steps, len(rows))
        scores = cross_validated_losses(x, q, w, folds, CS)
        done(steps, len(rows))
    else:
        tasks = [(xk, qk, wk, folds[k, :len(qk)], settings.seed) for k, (xk, qk, wk, _) in enumerate(rows)]
        # a model's 50 fits per task: over the pool's processes (liblinear's random state is
        # a process global, so never threads), the same fits either way
        fits = pool.map(liblinear_cv_losses, *zip(*tasks)) if pool is not None else (
            liblinear_cv_losses(*t) for t in tasks)
        scores = np.stack(list(each(steps, fits, len(tasks))))
    best = CS[np.argmin(scores, axis=1)]
    out = []
    for (xk, qk, wk, test), c, frame in zip(rows, best, frames):
        coef = continuous_fit(xk, qk, wk, c, settings.seed).coef_[0]
        pred = expit(test @ coef)
        out.append({"rate": pred.mean() * 100, "se": pd.Series(pred).sem() * 100, "C": c,
                    "weights": dict(zip([*controls, "difficulty", "model"], coef)),
                    "pred": pd.Series(pred, index=frame["prompt"].to_numpy())})
    return out


def controlled_one_model(frame: pd.DataFrame, difficulty: pd.Series, settings: LCSettings,
                         controls: tuple[str, ...] = ("length",), gamed: pd.DataFrame | None = None,
                         reg_lambda: float = 0.2) -> dict:
    """``controlled_fits`` of one model."""
    return controlled_fits([frame], difficulty, settings, controls, gamed, reg_lambda)[0]


def controlled_win_rates(prefs: pd.DataFrame, difficulty: pd.Series, kind: str = "lc",
                         settings: LCSettings = LCSettings(), gamed: pd.DataFrame | None = None,
                         pool: Executor | None = None, steps: Steps | None = None
                         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model: the ``kind`` ("lc" or "sc") win rate, its SE and the GLM's weights;
    per model and instruction: the predicted preference at no length/style difference).
    ``pool``: worker processes for the liblinear fits (``judgeaudit.workers.spawned_pool``)."""
    groups = list(prefs.groupby(["judge", "model_1", "model_2"], sort=True))
    fitted = [key for key, frame in groups if key[2] != key[1]]
    fits = dict(zip(fitted, controlled_fits([frame for key, frame in groups if key[2] != key[1]], difficulty,
                                            settings, CONTROLS[kind], gamed if kind == "lc" else None,
                                            pool=pool, steps=steps)))
    rows, preds = [], []
    for (judge, base, model), frame in groups:
        row = {"judge": judge, "baseline": base, "model": model}
        if model == base:  # the baseline against itself: 50 by construction
            rows.append({**row, f"{kind}_win_rate": 50.0, f"{kind}_se": 0.0})
            preds.append(pd.DataFrame({"model": model, "prompt": frame["prompt"], "pred": 0.5}))
            continue
        fit = fits[(judge, base, model)]
        rows.append({**row, f"{kind}_win_rate": fit["rate"], f"{kind}_se": fit["se"],
                     **{f"{kind}_w_{k}": v for k, v in fit["weights"].items()}})
        preds.append(pd.DataFrame({"model": model, "prompt": fit["pred"].index, "pred": fit["pred"].to_numpy()}))
    return pd.DataFrame(rows), pd.concat(preds, ignore_index=True)
