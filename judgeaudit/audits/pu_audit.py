"""Positive-unlabelled audit of judge verdicts with partial optimal transport.

Each comparison becomes an improvement vector z = normalise(F(x, o_w) - F(x, o_l)),
o_w being the response the judge preferred. Positives are comparisons whose verdict a
human verified; after denoising (per question type: keep the top ``keep`` by cosine to
the positive centre, then the top ``keep`` by cosine to the mean improvement
direction), a fraction m of the positives' mass is transported onto the unlabelled
comparisons. Those that receive little mass (s_j = mass_j / max mass < eta) look
unlike any verified verdict, and their verdict is flipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from judgeaudit.audits.partial_ot import transported_mass
from judgeaudit.audits.stats import mean_ci

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


def denoise(z_pos: np.ndarray, keep: float) -> np.ndarray:
    """Indices of positives kept by the P-core filter, then the alignment filter."""
    centre = z_pos.mean(axis=0)
    first = _top(z_pos @ centre / max(np.linalg.norm(centre), 1e-12), keep)
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


def audit_split(frame: pd.DataFrame, z: np.ndarray, labelled: np.ndarray, cfg: PUConfig,
                verified: Verified | None = None) -> pd.DataFrame:
    """One split: ``labelled`` marks comparisons whose human label is visible. Returns
    the unlabelled comparisons with their score and adjusted verdict.

    ``verified``: (frame, z) row-aligned with ``frame`` that the labelled comparisons are
    taken from instead, e.g. the same pairs before an attack, so that the positives stay
    clean while the unlabelled rows are the attacked ones (as the paper adjusts)."""
    source, z_source = verified if verified is not None else (frame, z)
    agree = (frame["verdict"] == frame["human"]).to_numpy()
    # the mass to move: the audited verdicts' consistency where labels are visible (a user
    # sees the judge's current verdict on the pairs they verified)
    m = float(np.clip(agree[labelled].mean() * cfg.m_scale, 0.01, 1.0)) if labelled.any() else 1.0
    positives = labelled & (source["verdict"] == source["human"]).to_numpy()
    rows, scores = [], []
    for qtype, idx in frame.groupby("qtype").indices.items():
        unl = idx[~labelled[idx]]
        pos = idx[positives[idx]]
        if len(pos) < cfg.min_positives:
            pos = np.flatnonzero(positives)
        pos = pos[denoise(z_source[pos], cfg.keep)] if len(pos) > 1 else pos
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


def run_pu_audit(frame: pd.DataFrame, z: np.ndarray, cfg: PUConfig, verified: Verified | None = None
                 ) -> pd.DataFrame:
    """Every split's unlabelled comparisons, with a ``split`` column.

    ``frame`` needs pair_id, qtype, verdict (judge: "A"/"B") and human ("A"/"B");
    ``verified`` as in ``audit_split``."""
    if verified is not None and not np.array_equal(verified[0]["pair_id"].to_numpy(), frame["pair_id"].to_numpy()):
        raise ValueError("the verified frame must hold the same pairs as the audited one, in the same order")
    rng = np.random.default_rng(cfg.seed)
    splits = []
    for split in range(cfg.n_splits):
        labelled = np.zeros(len(frame), bool)
        for idx in frame.groupby("qtype").indices.values():  # stratified by question type
            k = max(1, int(round(cfg.p_ratio * len(idx))))
            labelled[rng.choice(idx, size=min(k, len(idx) - 1), replace=False)] = True
        splits.append(audit_split(frame, z, labelled, cfg, verified).assign(split=split))
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
                p_ratios: tuple[float, ...] = (0.1, 0.2, 0.3), m_scales: tuple[float, ...] = (0.8, 1.0, 1.2),
                verified: Verified | None = None, n_boot: int = 200) -> pd.DataFrame:
    """Overall consistency before and after adjustment over a grid of p_ratio (share of
    verified pairs) x m_scale (transport fraction), half the splits each."""
    rows = []
    for p_ratio, m_scale in ((p, m) for p in p_ratios for m in m_scales):
        grid = replace(cfg, p_ratio=p_ratio, m_scale=m_scale, n_splits=max(3, cfg.n_splits // 2))
        overall = consistency_table(run_pu_audit(frame, z, grid, verified), n_boot=n_boot,
                                    confidence=confidence, seed=cfg.seed, overall_only=True).iloc[-1]
        rows.append({"p_ratio": p_ratio, "m_scale": m_scale, **{
            k: overall[k] for k in ("cons_orig", "cons_adj", "cons_adj_ci_low", "cons_adj_ci_high",
                                    "flip_rate", "n_pairs")}})
    return pd.DataFrame(rows)
