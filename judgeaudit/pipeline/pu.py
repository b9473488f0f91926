"""The PU audit on JudgeBench: every real judge's verdicts, ground truth standing in for
human labels, a frozen encoder for F(x, o)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.audits.pu_audit import PUConfig, consistency_table, improvement_vectors, run_pu_audit
from judgeaudit.models.encoder import Encoder
from judgeaudit.sources.judgebench import load_judges, load_pairs


def encode_pairs(pairs: pd.DataFrame, encoder: Encoder, question_chars: int = 400,
                 answer_chars: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    """F(x, o) for both responses: the question's start and the response's end (where
    final answers sit), within the encoder's window."""
    def texts(col: str) -> list[str]:
        return [f"{q[:question_chars]}\n\n{r[-answer_chars:]}" for q, r in zip(pairs["question"], pairs[col])]
    return encoder.embed(texts("response_a")), encoder.embed(texts("response_b"))


def judgebench_pu_audit(root: str | Path, encoder: Encoder, cfg: PUConfig, *, n_boot: int = 2000,
                        confidence: float = 0.95, sensitivity: bool = True
                        ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(consistency per judge and question type, sensitivity to p_ratio and m, per-item
    results of every split) for every judge in the JudgeBench folder ``root``."""
    pairs = load_pairs(root)
    emb_a, emb_b = encode_pairs(pairs, encoder)
    tables, sens, items = [], [], []
    for judge, verdicts in load_judges(root).groupby("judge", sort=True):
        frame = pairs.merge(verdicts, on="pair_id", how="inner")
        index = pairs.reset_index().set_index("pair_id").loc[frame["pair_id"], "index"].to_numpy()
        z = improvement_vectors(emb_a[index], emb_b[index], frame["verdict"])
        results = run_pu_audit(frame, z, cfg)
        centred = z - z.mean(axis=0)
        coords = centred @ np.linalg.svd(centred, full_matrices=False)[2][:2].T  # PCA to 2-D
        proj = pd.DataFrame({"pair_id": frame["pair_id"], "pc1": coords[:, 0], "pc2": coords[:, 1]})
        items.append(results.merge(proj, on="pair_id").assign(judge=judge))
        tables.append(consistency_table(results, n_boot=n_boot, confidence=confidence,
                                        seed=cfg.seed).assign(judge=judge))
        if sensitivity:
            for p_ratio in (0.1, 0.2, 0.3):
                for m_scale in (0.8, 1.0, 1.2):
                    grid = replace(cfg, p_ratio=p_ratio, m_scale=m_scale, n_splits=max(3, cfg.n_splits // 2))
                    overall = consistency_table(run_pu_audit(frame, z, grid), n_boot=200,
                                                confidence=confidence, seed=cfg.seed).iloc[-1]
                    sens.append({"judge": judge, "p_ratio": p_ratio, "m_scale": m_scale,
                                 "cons_orig": overall.cons_orig, "cons_adj": overall.cons_adj,
                                 "flip_rate": overall.flip_rate, "n_pairs": overall.n_pairs})
    return (pd.concat(tables, ignore_index=True), pd.DataFrame(sens),
            pd.concat(items, ignore_index=True))
