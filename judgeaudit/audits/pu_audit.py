"""Positive-unlabelled audit of judge verdicts with partial optimal transport.

Each comparison becomes an improvement vector z = normalise(F(x, o_w) - F(x, o_l)),
o_w being the response the judge preferred. Positives are the comparisons a human
labelled, their z oriented by the human's order (the paper's; ``positives="agreed"``:
only those where the judge agreed with the human, our earlier definition). After
denoising (per question type: keep the top ``keep`` by cosine to the centre of the
human winners' embeddings e_i, the paper's P-core; ``core_filter="difference"``: of the
z instead; then the top ``keep`` by cosine to the mean improvement direction), a
fraction m of the positives' mass is transported onto the unlabelled comparisons. Those
that receive little mass (s_j = mass_j / max mass < eta) look unlike any verified
verdict, and their verdict is flipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from judgeaudit.audits.partial_ot import transported_mass
from judgeaudit.audits.stats import mean_ci, paired_bootstrap

FLIP = {"A": "B", "B": "A"}


@dataclass(frozen=True)
class PUConfig:
    p_ratio: float = 0.2  # share of comparisons with a visible human label
    keep: float = 0.7  # denoising: share kept at each of the two filters
    eta: float = 0.5  # flip where the normalised transported mass is below this
    m_scale: float = 1.0  # multiplies the mass estimated from judge-human consistency
    n_splits: int = 10
    min_positives: int = 5  # fewer positives of a type: use every type's positives
    method: str = "auto"  # partial OT: exact | entropic | auto (by size)
    seed: int = 0
    core_filter: str = "winner"  # P-core on the human winner's embedding e_i (paper) | "difference" (z)
    positives: str = "all"  # every labelled pair, oriented by the human (paper) | "agreed" (judge = human)
    m: float | None = None  # a fixed transport mass (the m sweep); None: estimated from consistency

    def __post_init__(self) -> None:
        if self.core_filter not in ("winner", "difference") or self.positives not in ("all", "agreed"):
            raise ValueError(f"unknown PU definition: core_filter={self.core_filter!r}, "
                             f"positives={self.positives!r}")

    @property
    def definitions(self) -> str:
        """"paper" or "ours" where core_filter and positives are one of the two sets, else both settings."""
        return definitions_of(self.core_filter, self.positives)


PAPER = {"core_filter": "winner", "positives": "all"}
OURS = {"core_filter": "difference", "positives": "agreed"}


def definitions_of(core_filter: str, positives: str) -> str:
    """The name of a (core_filter, positives) choice: "paper", "ours", or the two settings."""
    chosen = {"core_filter": core_filter, "positives": positives}
    return "paper" if chosen == PAPER else "ours" if chosen == OURS else f"core_filter={core_filter}, positives={positives}"
# the paper's sweeps of the share verified and of the transport mass
P_RATIOS = (0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99)
M_VALUES = (0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99)
Pairs = tuple[np.ndarray, np.ndarray]  # F(x, o_A), F(x, o_B), row-aligned with a frame


def improvement_vectors(emb_a: np.ndarray, emb_b: np.ndarray, verdicts: pd.Series) -> np.ndarray:
    """Rows normalised F(x, winner) - F(x, loser) for the judge's verdicts ("A"/"B")."""
    sign = np.where(verdicts.to_numpy() == "A", 1.0, -1.0)[:, None]
    diff = sign * (emb_a - emb_b)
    return diff / np.maximum(np.linalg.norm(diff, axis=1, keepdims=True), 1e-12)


def pca_2d(z: np.ndarray) -> np.ndarray:
    """The improvement vectors on their first two principal components (for plots)."""
    centred = z - z.mean(axis=0)
    return centred @ np.linalg.svd(centred, full_matrices=False)[2][:2].T


def _top(scores: np.ndarray, keep: float) -> np.ndarray:
    k = max(1, int(np.ceil(keep * len(scores))))
    return np.sort(np.argsort(-scores, kind="stable")[:k])


def denoise(z_pos: np.ndarray, keep: float, core: np.ndarray | None = None) -> np.ndarray:
    """Indices of positives kept by the P-core filter (cosine to the centre of ``core``,
    the winners' embeddings e_i; None: of ``z_pos``), then the alignment filter."""
    core = z_pos if core is None else core / np.maximum(np.linalg.norm(core, axis=1, keepdims=True), 1e-12)
    centre = core.mean(axis=0)
    first = _top(core @ centre / max(np.linalg.norm(centre), 1e-12), keep)
    direction = z_pos[first].mean(axis=0)
    second = _top(z_pos[first] @ direction / max(np.linalg.norm(direction), 1e-12), keep)
    return first[second]


def pu_scores(z_pos: np.ndarray, z_unl: np.ndarray, m: float, cfg: PUConfig) -> np.ndarray:
    """s_j in [0, 1] for each unlabelled comparison."""
    if len(z_unl) == 0:
        return np.zeros(0)
    mass = transported_mass(z_pos, z_unl, m, method=cfg.method)
    return mass / mass.max() if mass.max() > 0 else mass


Verified = tuple[pd.DataFrame, np.ndarray]


def human_winners(frame: pd.DataFrame, pairs: Pairs) -> np.ndarray:
    """e_i: the embedding of the response the human preferred, per row."""
    return np.where((frame["human"].to_numpy() == "A")[:, None], pairs[0], pairs[1])


def audit_split(frame: pd.DataFrame, z: np.ndarray, labelled: np.ndarray, cfg: PUConfig,
                verified: Verified | None = None, pairs: Pairs | None = None) -> pd.DataFrame:
    """One split: ``labelled`` marks comparisons whose human label is visible. Returns
    the unlabelled comparisons with their score and adjusted verdict.

    ``verified``: (frame, z) row-aligned with ``frame`` that the labelled comparisons are
    taken from instead, e.g. the same pairs before an attack, so that the positives stay
    clean while the unlabelled rows are the attacked ones (as the paper adjusts).
    ``pairs``: both responses' embeddings, row-aligned with the positives' source (the
    verified frame where given); the P-core filter on e_i needs them."""
    source, z_source = verified if verified is not None else (frame, z)
    agree = (frame["verdict"] == frame["human"]).to_numpy()
    # the mass to move: the audited verdicts' consistency where labels are visible (a user
    # sees the judge's current verdict on the pairs they verified)
    m = float(np.clip(agree[labelled].mean() * cfg.m_scale, 0.01, 1.0)) if labelled.any() else 1.0
    m = m if cfg.m is None else cfg.m
    source_agree = (source["verdict"] == source["human"]).to_numpy()
    if cfg.positives == "all":  # every labelled pair, its z turned to the human's order
        positives, z_source = labelled.copy(), z_source * np.where(source_agree, 1.0, -1.0)[:, None]
    else:
        positives = labelled & source_agree
    if cfg.core_filter == "winner" and pairs is None:
        raise ValueError("the P-core filter on the winner's embedding needs both responses' embeddings (pairs)")
    core = human_winners(source, pairs) if cfg.core_filter == "winner" else None
    rows, scores = [], []
    for qtype, idx in frame.groupby("qtype").indices.items():
        unl = idx[~labelled[idx]]
        pos = idx[positives[idx]]
        if len(pos) < cfg.min_positives:
            pos = np.flatnonzero(positives)
        if len(pos) > 1:
            pos = pos[denoise(z_source[pos], cfg.keep, None if core is None else core[pos])]
        # no verified verdict at all: nothing to compare with, so nothing is flipped
        scores.append(pu_scores(z_source[pos], z[unl], m, cfg) if len(pos) else np.ones(len(unl)))
        rows.append(unl)
    # one table at the end, from arrays (this runs for every split of every sensitivity setting)
    at = np.concatenate(rows) if rows else np.zeros(0, int)
    score = np.concatenate(scores) if scores else np.zeros(0)
    verdict, flip = frame["verdict"].to_numpy()[at], score < cfg.eta
    return pd.DataFrame({"pair_id": frame["pair_id"].to_numpy()[at], "qtype": frame["qtype"].to_numpy()[at],
                         "verdict": verdict, "human": frame["human"].to_numpy()[at], "score": score,
                         "flipped": flip, "mass": m,
                         "adjusted": [FLIP.get(v) if f else v for v, f in zip(verdict, flip)]})


def run_pu_audit(frame: pd.DataFrame, z: np.ndarray, cfg: PUConfig, verified: Verified | None = None,
                 pairs: Pairs | None = None) -> pd.DataFrame:
    """Every split's unlabelled comparisons, with a ``split`` column.

    ``frame`` needs pair_id, qtype, verdict (judge: "A"/"B") and human ("A"/"B");
    ``verified`` and ``pairs`` as in ``audit_split``."""
    if verified is not None and not np.array_equal(verified[0]["pair_id"].to_numpy(), frame["pair_id"].to_numpy()):
        raise ValueError("the verified frame must hold the same pairs as the audited one, in the same order")
    rng = np.random.default_rng(cfg.seed)
    splits = []
    for split in range(cfg.n_splits):
        labelled = np.zeros(len(frame), bool)
        for idx in frame.groupby("qtype").indices.values():  # stratified by question type
            k = max(1, int(round(cfg.p_ratio * len(idx))))
            labelled[rng.choice(idx, size=min(k, len(idx) - 1), replace=False)] = True
        splits.append(audit_split(frame, z, labelled, cfg, verified, pairs).assign(split=split))
    return pd.concat(splits, ignore_index=True)


def consistency_table(results: pd.DataFrame, *, n_boot: int, confidence: float, seed: int,
                      overall_only: bool = False) -> pd.DataFrame:
    """Cons_orig and Cons_adj per question type and overall (``overall_only``: the overall
    row alone): mean and std over splits, a bootstrap CI over comparisons (each averaged
    over the splits it was unlabelled in), and the flip rate."""
    res = results.assign(orig=results["verdict"] == results["human"],
                         adj=results["adjusted"] == results["human"])
    rows = []
    for qtype, grp in [*([] if overall_only else res.groupby("qtype")), ("all", res)]:
        per_split = grp.groupby("split")[["orig", "adj", "flipped"]].mean()
        per_pair = grp.groupby("pair_id")[["orig", "adj"]].mean()
        row = {"qtype": qtype, "n_pairs": len(per_pair), "n_splits": len(per_split),
               "flip_rate": float(per_split["flipped"].mean())}
        for col, name in (("orig", "cons_orig"), ("adj", "cons_adj")):
            est = mean_ci(per_pair[col].to_numpy(), n_boot=n_boot, confidence=confidence, seed=seed)
            row.update({name: float(per_split[col].mean()), f"{name}_std": float(per_split[col].std(ddof=0)),
                        f"{name}_ci_low": est.ci_low, f"{name}_ci_high": est.ci_high})
        rows.append(row)
    return pd.DataFrame(rows)


def sensitivity(frame: pd.DataFrame, z: np.ndarray, cfg: PUConfig, *, confidence: float,
                p_ratios: tuple[float, ...] = P_RATIOS, m_values: tuple[float, ...] = M_VALUES,
                verified: Verified | None = None, pairs: Pairs | None = None, n_boot: int = 200) -> pd.DataFrame:
    """Overall consistency before and after adjustment, as the paper sweeps: the share of
    verified pairs (``sweep="p_ratio"``, m estimated) and the transport mass m
    (``sweep="m"``, at ``cfg.p_ratio``), half the splits each."""
    grids = [("p_ratio", replace(cfg, p_ratio=p)) for p in p_ratios] + [("m", replace(cfg, m=m)) for m in m_values]
    rows = []
    for sweep, grid in grids:
        grid = replace(grid, n_splits=max(3, cfg.n_splits // 2))
        results = run_pu_audit(frame, z, grid, verified, pairs)
        overall = consistency_table(results, n_boot=n_boot, confidence=confidence, seed=cfg.seed,
                                    overall_only=True).iloc[-1]
        est = mean_ci(agreement_gain(results), n_boot=n_boot, confidence=confidence, seed=cfg.seed)
        rows.append({"sweep": sweep, "p_ratio": grid.p_ratio, "m": float(results["mass"].mean()) if len(results)
                     else np.nan, **{k: overall[k] for k in ("cons_orig", "cons_adj", "cons_adj_ci_low",
                                                             "cons_adj_ci_high", "flip_rate", "n_pairs")},
                     "gain": est.estimate, "gain_ci_low": est.ci_low, "gain_ci_high": est.ci_high})
    return pd.DataFrame(rows)


def agreement_gain(results: pd.DataFrame, by: tuple[str, ...] = ("pair_id",)) -> np.ndarray:
    """Adjusted minus raw agreement with the human per unit of ``by`` (a pair), averaged over
    the splits it was unlabelled in: the units a gain's CI resamples."""
    g = (results["adjusted"] == results["human"]).astype(float) - (results["verdict"] == results["human"])
    return g.groupby([results[c] for c in by]).mean().to_numpy()


def _auc(score: np.ndarray, wrong: np.ndarray, axis: int = -1) -> np.ndarray:
    """AUC (Mann-Whitney) of a low score for a wrong verdict along ``axis``; average ranks, so
    a tie counts one half; NaN where every verdict is wrong or none is."""
    wrong = wrong.astype(bool)
    ranks = rankdata(-score, axis=axis)
    n_wrong = wrong.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (((ranks * wrong).sum(axis=axis) - n_wrong * (n_wrong + 1) / 2)
                / (n_wrong * (wrong.shape[axis] - n_wrong)))


def suspect_auc(results: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> dict:
    """How well s_j ranks wrong verdicts below right ones: the AUC of a low score for a wrong
    verdict, per pair (its score averaged over the splits it was unlabelled in), with a
    bootstrap CI over pairs; 0.5 is no better than chance."""
    per = results.assign(wrong=results["verdict"] != results["human"]).groupby("pair_id").agg(
        score=("score", "mean"), wrong=("wrong", "first"))
    score, wrong = per["score"].to_numpy(float), per["wrong"].to_numpy(float)
    if wrong.all() or not wrong.any():
        return {"auc": np.nan, "auc_ci_low": np.nan, "auc_ci_high": np.nan, "n": len(per),
                "n_wrong": int(wrong.sum())}
    est = paired_bootstrap(_auc, [score, wrong], n_boot=n_boot, confidence=confidence, seed=seed)
    return {"auc": est.estimate, "auc_ci_low": est.ci_low, "auc_ci_high": est.ci_high, "n": len(per),
            "n_wrong": int(wrong.sum())}
