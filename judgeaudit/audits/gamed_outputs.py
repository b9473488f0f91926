"""Gamed leaderboard entries: outputs that barely depend on the instruction. A model whose
outputs across different instructions are near-identical (a constant adversarial string,
a fixed template carrying the win rate) answers no instruction, whatever its win rate.

Evidence per model: the median TF-IDF (character 3-5-gram) cosine similarity between its
outputs to two different instructions (random pairs, seeded), the share of such pairs
above 0.8, and the mean similarity of each output to its own instruction. A model is
flagged when the median cross-instruction similarity exceeds ``threshold``: ordinary
models sit near 0.1 on AlpacaEval (at most 0.13), NullModel at 1.0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer


def gamed_outputs(outputs: pd.DataFrame, threshold: float = 0.5, n_pairs: int = 800, seed: int = 0,
                  max_chars: int = 2000) -> pd.DataFrame:
    """``outputs``: model, prompt, output. One row per model with the evidence and ``flagged``."""
    texts = outputs["output"].fillna("").str[:max_chars]
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, max_features=50_000)
    vec.fit(texts.sample(min(5000, len(texts)), random_state=seed))
    rng = np.random.default_rng(seed)
    rows = []
    for model, grp in outputs.groupby("model", sort=True):
        x = vec.transform(grp["output"].fillna("").str[:max_chars])
        i, j = rng.integers(0, len(grp), n_pairs), rng.integers(0, len(grp), n_pairs)
        keep = grp["prompt"].to_numpy()[i] != grp["prompt"].to_numpy()[j]
        sims = np.asarray(x[i[keep]].multiply(x[j[keep]]).sum(axis=1)).ravel()
        own = np.asarray(x.multiply(vec.transform(grp["prompt"].fillna("").str[:max_chars])).sum(axis=1)).ravel()
        median = float(np.median(sims)) if len(sims) else 0.0
        rows.append({"model": model, "cross_instruction_similarity": median,
                     "share_near_identical": float(np.mean(sims > 0.8)) if len(sims) else 0.0,
                     "instruction_similarity": float(own.mean()), "pairs": int(keep.sum()),
                     "example_output": grp["output"].iloc[0][:200], "flagged": median > threshold})
    return pd.DataFrame(rows)
