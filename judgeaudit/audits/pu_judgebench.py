"""The PU audit on JudgeBench (``judgeaudit pu-audit``): every judge in the folder, on
every response model's pairs it judged, ground truth standing in for human labels, a
frozen encoder for F(x, o)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.audits.pu_audit import PUConfig, consistency_table, improvement_vectors, pca_2d, run_pu_audit
from judgeaudit.audits.pu_audit import sensitivity as pu_sensitivity
from judgeaudit.audits.pu_verdicts import binary_items, texts_for
from judgeaudit.models.encoder import Encoder
from judgeaudit.sources.judgebench import read_judgebench


def judgebench_pu_audit(root: str | Path | pd.DataFrame, encoder: Encoder, cfg: PUConfig, *,
                        n_boot: int = 2000, confidence: float = 0.95, sensitivity: bool = True
                        ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(consistency per judge and question type, sensitivity to p_ratio and m, per-item
    results of every split) for every judge in the JudgeBench folder ``root`` (or its
    judgment table, already read and checked)."""
    table = read_judgebench(root)[0] if not isinstance(root, pd.DataFrame) else root
    items, _ = binary_items(table)
    if items.empty:
        raise ValueError("no judge verdict with a label to audit: the folder has pairs but no judge file")
    texts = sorted(set(texts_for(items, "response_a")) | set(texts_for(items, "response_b")))
    vectors = dict(zip(texts, encoder.embed(texts)))
    tables, sens, per_item = [], [], []
    for judge, frame in items.groupby("judge", sort=True):
        frame = frame.reset_index(drop=True)
        emb_a = np.stack([vectors[t] for t in texts_for(frame, "response_a")])
        emb_b = np.stack([vectors[t] for t in texts_for(frame, "response_b")])
        z = improvement_vectors(emb_a, emb_b, frame["verdict"])
        results = run_pu_audit(frame, z, cfg, pairs=(emb_a, emb_b))
        coords = pca_2d(z)
        proj = pd.DataFrame({"pair_id": frame["pair_id"], "pc1": coords[:, 0], "pc2": coords[:, 1]})
        per_item.append(results.merge(proj, on="pair_id").assign(judge=judge))
        tables.append(consistency_table(results, n_boot=n_boot, confidence=confidence,
                                        seed=cfg.seed).assign(judge=judge))
        if sensitivity:
            sens.append(pu_sensitivity(frame, z, cfg, confidence=confidence, pairs=(emb_a, emb_b)).assign(judge=judge))
    return (pd.concat(tables, ignore_index=True), pd.concat(sens, ignore_index=True) if sens else pd.DataFrame(),
            pd.concat(per_item, ignore_index=True))
