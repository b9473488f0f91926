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

from concurrent.futures import Executor

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from judgeaudit.progress import Steps, each


def gamed_outputs(outputs: pd.DataFrame, threshold: float = 0.5, n_outputs: int = 200, seed: int = 0,
                  max_chars: int = 500, pool: Executor | None = None,
                  steps: Steps | None = None) -> pd.DataFrame:
    """``outputs``: model, prompt, output. One row per model with the evidence and ``flagged``.
    Per model, a seeded sample of ``n_outputs`` outputs is compared pairwise. ``pool``: worker
    processes that share the models (the same figures); ``steps``: a step per eight models."""
    texts = outputs["output"].fillna("").str[:max_chars]
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, max_features=50_000)
    vec.fit(texts.sample(min(5000, len(texts)), random_state=seed))
    # each instruction once (the models share them); a row's TF-IDF depends on that row alone
    distinct = list(dict.fromkeys(outputs["prompt"].fillna("").str[:max_chars]))
    instruction_x, row_of = vec.transform(distinct), {text: k for k, text in enumerate(distinct)}
    models = []
    for model, grp in outputs.groupby("model", sort=True):
        sample = grp.sample(min(n_outputs, len(grp)), random_state=seed)
        asked = instruction_x[[row_of[t] for t in sample["prompt"].fillna("").str[:max_chars]]]
        models.append((model, sample["output"].fillna("").str[:max_chars].tolist(), sample["prompt"].to_numpy(),
                       asked, grp["output"].iloc[0][:200]))
    # eight models a task: the vectorizer (megabytes) goes with each
    parts = [models[k:k + 8] for k in range(0, len(models), 8)]
    evidence = (pool.map(_evidence, [vec] * len(parts), parts, [threshold] * len(parts)) if pool is not None
                else (_evidence(vec, part, threshold) for part in parts))
    rows = [row for part in each(steps, evidence, len(parts)) for row in part]
    return pd.DataFrame(rows)


def _evidence(vec: TfidfVectorizer, models: list[tuple], threshold: float) -> list[dict]:
    """The evidence row of each (model, sampled outputs, their instructions, the
    instructions' TF-IDF, an example output)."""
    rows = []
    for model, sampled, prompts, asked, example in models:
        x = vec.transform(sampled)
        sims = (x @ x.T).toarray()
        other = prompts[:, None] != prompts[None, :]
        cross = sims[np.triu(other, k=1)]
        own = np.asarray(x.multiply(asked).sum(axis=1)).ravel()
        median = float(np.median(cross)) if len(cross) else 0.0
        rows.append({"model": model, "cross_instruction_similarity": median,
                     "share_near_identical": float(np.mean(cross > 0.8)) if len(cross) else 0.0,
                     "instruction_similarity": float(own.mean()), "pairs": int(len(cross)),
                     "example_output": example, "flagged": median > threshold})
    return rows
