"""Error Bias of related judges: how far a judge's errors lean towards the student of its
related generator, against a reference verdict on the same comparison.

For a judge related to generator g, on every comparison that involves g's student, with
s = the score of g's student (1 win, 0 loss, 0.5 tie; both presentation orders averaged):

    EB = mean( s_judge - s_reference )

With decisive verdicts this is P(the judge errs in favour of its student) minus P(it errs
against it): 0 for a judge whose disagreements with the reference fall either way, > 0 for
one whose disagreements favour its own student. Per tier, pooled over the tier's judges,
cells and prompts; the CI resamples prompts (a prompt's comparisons move together).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.audits.leakage import CELL
from judgeaudit.audits.stats import BootstrapSettings, mean_ci


def reference_scores(scores: pd.DataFrame, judges: list[str]) -> pd.Series:
    """The reference: ``judges``' mean score per comparison (cell + prompt)."""
    ref = scores[scores["judge"].isin(judges)]
    if ref.empty:
        raise ValueError(f"no scores of the reference judges {judges}")
    return ref.groupby([*CELL, "prompt_id"])["score"].mean()


def error_bias(scores: pd.DataFrame, reference: pd.Series, roster: list[dict],
               boot: BootstrapSettings) -> pd.DataFrame:
    """EB per tier of related judges (metric, tier, estimate, ci_low, ci_high, n prompts,
    n_comparisons). ``scores``: ``pair_scores`` rows; ``reference``: ``reference_scores``."""
    keyed = scores.set_index([*CELL, "prompt_id"])
    ref = reference.reindex(keyed.index).to_numpy()
    first = keyed.index.get_level_values("generator_a").to_numpy()
    second = keyed.index.get_level_values("generator_b").to_numpy()
    prompt = keyed.index.get_level_values("prompt_id").to_numpy()
    judge, gap = keyed["judge"].to_numpy(), keyed["score"].to_numpy() - ref
    rows = []
    for tier in sorted({r["tier"] for r in roster if r["related_generator"] is not None}):
        parts = []
        for entry in (r for r in roster if r["tier"] == tier and r["related_generator"] is not None):
            g = entry["related_generator"]
            involved = (judge == entry["judge"]) & ~np.isnan(ref) & ((first == g) | (second == g))
            # the score is the canonical first student's: g's own, or its opponent's
            diff = np.where(first == g, gap, -gap)
            parts.append(pd.DataFrame({"prompt_id": prompt[involved], "diff": diff[involved]}))
        both = pd.concat(parts, ignore_index=True)
        if both.empty:
            continue
        per_prompt = both.groupby("prompt_id")["diff"].mean()
        est = mean_ci(per_prompt.to_numpy(), n_boot=boot.n_boot, confidence=boot.confidence, seed=boot.seed)
        rows.append({"metric": "error_bias", "tier": tier, **est.as_dict(), "n_comparisons": len(both)})
    return pd.DataFrame(rows)
