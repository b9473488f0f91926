"""Stage ``robustness``: how much of the leakage is spurious features, and how easily
presentation moves the judges.

- Spurious-feature ablation: remove style, format or wording from every student
  response, re-judge every pair, and recompute PLS (before vs after, per tier).
- Presentation attacks: for each judge, attack the response it made lose (length,
  sentiment, distraction), re-judge, and count flips per judge and question category.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.attacks.presentation import ATTACKS
from judgeaudit.attacks.transforms import ABLATIONS
from judgeaudit.audits.leakage import leakage_scores, pair_scores
from judgeaudit.audits.stats import mean_ci
from judgeaudit.config import Params
from judgeaudit.judging.pairwise import binary_verdict
from judgeaudit.pipeline.audit import unique_roster
from judgeaudit.pipeline.judge import comparisons, judge_pairs
from judgeaudit.pipeline.layout import Layout


def _judge_all(params: Params, pairs: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    return pd.concat([judge_pairs(params, j, pairs, layout, progress=False) for j in unique_roster(params)],
                     ignore_index=True)


def ablation_pls(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                 layout: Layout) -> pd.DataFrame:
    """PLS per tier (all methods pooled) before and after each ablation."""
    a = params.audit
    kw = dict(n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    roster = params.judge_roster()
    tables = [leakage_scores(pair_scores(judgments), roster, **kw).assign(condition="original")]
    for name, ablate in ABLATIONS.items():
        pairs = comparisons(responses.assign(response=responses["response"].map(ablate)),
                            params.leakage.generators)
        tables.append(leakage_scores(pair_scores(_judge_all(params, pairs, layout)), roster, **kw)
                      .assign(condition=f"no-{name}"))
    out = pd.concat(tables, ignore_index=True)
    return out[out.scope == "tier"][["metric", "condition", "tier", "estimate", "ci_low", "ci_high", "n"]]


def attack_flips(params: Params, responses: pd.DataFrame, judgments: pd.DataFrame,
                 layout: Layout) -> pd.DataFrame:
    """Flip rate per (judge, attack, question category) with n and a bootstrap CI."""
    a = params.audit
    pairs = comparisons(responses, params.leakage.generators)
    category = responses.drop_duplicates("prompt_id").set_index("prompt_id")["category"]
    key = ["method", "student_base", "generator_a", "generator_b", "prompt_id"]
    rows = []
    for entry in unique_roster(params):
        mine = judgments[judgments.judge == entry["judge"]]
        wide = mine.pivot_table(index=key, columns="order", values="verdict", aggfunc="first")
        before = pd.Series([binary_verdict(x, y) for x, y in zip(wide["AB"], wide["BA"])], index=wide.index)
        lose_a = before.reindex(pd.MultiIndex.from_frame(pairs[key])).to_numpy() == "B"
        for name, attack in ATTACKS.items():
            attacked = pairs.assign(
                response_a=np.where(lose_a, pairs.response_a.map(attack), pairs.response_a),
                response_b=np.where(~lose_a, pairs.response_b.map(attack), pairs.response_b))
            after_j = judge_pairs(params, entry, attacked, layout, progress=False)
            wide_after = after_j.pivot_table(index=key, columns="order", values="verdict", aggfunc="first")
            after = pd.Series([binary_verdict(x, y) for x, y in zip(wide_after["AB"], wide_after["BA"])],
                              index=wide_after.index)
            flipped = (after.reindex(before.index) != before).astype(float)
            cats = category.reindex(before.index.get_level_values("prompt_id")).to_numpy()
            for cat in ["all", *sorted(set(cats))]:
                values = flipped.to_numpy() if cat == "all" else flipped.to_numpy()[cats == cat]
                est = mean_ci(values, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
                rows.append({"judge": entry["judge"], "tier": entry["tier"], "attack": name, "category": cat,
                             "flip_rate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high,
                             "n": est.n})
    return pd.DataFrame(rows)
