"""Gamed leaderboard entries: outputs that barely depend on the instruction. A model whose
outputs across different instructions are near-identical (a constant adversarial string,
a fixed template carrying the win rate) answers no instruction, whatever its win rate.

Evidence per model: the median TF-IDF (character 3-5-gram) cosine similarity between its
outputs to two different instructions (every pair of a seeded sample), the share of such
pairs above 0.8, and the mean similarity of each output to its own instruction. A model is
flagged when the median cross-instruction similarity exceeds ``threshold``: ordinary
models sit below 0.1 on AlpacaEval 2.0 (the first 500 characters of each output), NullModel
at 1.0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer


def gamed_outputs(outputs: pd.DataFrame, threshold: float = 0.5, n_outputs: int = 200, seed: int = 0,
                  max_chars: int = 500) -> pd.DataFrame:
    """``outputs``: model, prompt, output. One row per model with the evidence and ``flagged``.
    Per model, a seeded sample of ``n_outputs`` outputs is compared pairwise."""
    texts = outputs["output"].fillna("").str[:max_chars]
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, max_features=50_000)
    vec.fit(texts.sample(min(5000, len(texts)), random_state=seed))
    rows = []
    for model, grp in outputs.groupby("model", sort=True):
        sample = grp.sample(min(n_outputs, len(grp)), random_state=seed)
        x = vec.transform(sample["output"].fillna("").str[:max_chars])
        sims = (x @ x.T).toarray()
        prompts = sample["prompt"].to_numpy()
        other = prompts[:, None] != prompts[None, :]
        cross = sims[np.triu(other, k=1)]
        own = np.asarray(x.multiply(vec.transform(sample["prompt"].fillna("").str[:max_chars])).sum(axis=1)).ravel()
        median = float(np.median(cross)) if len(cross) else 0.0
        rows.append({"model": model, "cross_instruction_similarity": median,
                     "share_near_identical": float(np.mean(cross > 0.8)) if len(cross) else 0.0,
                     "instruction_similarity": float(own.mean()), "pairs": int(len(cross)),
                     "example_output": grp["output"].iloc[0][:200], "flagged": median > threshold})
    return pd.DataFrame(rows)
