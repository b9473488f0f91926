"""Stage ``pu``: the PU audit on the embedded default's own judges.

Known-quality pairs (the correct answer vs a degraded one, same house style, random
position) stand in for human-labelled comparisons. Every judge gives verdicts in both
orders; then each presentation attack is applied to the response the judge made lose,
the judge re-judges, and the PU audit runs again to see whether it recovers the
consistency the attack cost.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

from judgeaudit.attacks.presentation import ATTACKS
from judgeaudit.audits.stats import mean_ci
from judgeaudit.audits.pu_audit import PUConfig, consistency_table, improvement_vectors, run_pu_audit
from judgeaudit.config import Params, build_rewriter
from judgeaudit.generation.corpus import degrade, make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.models.encoder import Encoder
from judgeaudit.pipeline.audit import unique_roster
from judgeaudit.pipeline.judge import attack_losers, binary_verdicts, judge_pairs
from judgeaudit.pipeline.layout import Layout


def known_quality_pairs(params: Params) -> pd.DataFrame:
    """One comparison per item: correct vs degraded answer, ``human`` = the correct side."""
    cfg = params.pu
    rng = random.Random(params.seed + 9)
    rows = []
    for item in make_items(cfg.n_pairs, params.seed + 9, "k", tuple(params.corpus.categories)):
        style = rng.choice(STYLES)
        good, bad = render(item, style, rng), render(item, style, rng, fact=degrade(item, rng))
        good_first = rng.random() < 0.5
        rows.append(dict(method="known", student_base="-", prompt_id=item.prompt_id, prompt=item.prompt,
                         qtype=item.category, student_a="A", student_b="B", generator_a="A",
                         generator_b="B", response_a=good if good_first else bad,
                         response_b=bad if good_first else good, human="A" if good_first else "B"))
    return pd.DataFrame(rows)


def pu_stage(params: Params, layout: Layout) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(consistency per judge x condition x question type, per-pair verdicts)."""
    cfg = params.pu
    pu_cfg = PUConfig(p_ratio=cfg.p_ratio, eta=cfg.eta, n_splits=cfg.splits, seed=params.seed)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    pairs = known_quality_pairs(params)
    encoder = Encoder(cfg.encoder)
    cache: dict[str, np.ndarray] = {}

    def embed(prompts: pd.Series, texts: pd.Series) -> np.ndarray:
        keys = [f"{p}\n\n{t}" for p, t in zip(prompts, texts)]
        missing = sorted({k for k in keys if k not in cache})
        if missing:
            cache.update(zip(missing, encoder.embed(missing)))
        return np.stack([cache[k] for k in keys])

    rewriter = build_rewriter(params, layout.models)
    tables, verdict_rows = [], []
    for entry in unique_roster(params):
        judge = entry["judge"]
        clean = binary_verdicts(judge_pairs(params, entry, pairs, layout, progress=False), ["prompt_id"])
        conditions = {"clean": (pairs, clean)}
        lose_a = clean.reindex(pairs.prompt_id).to_numpy() == "B"
        for name in ATTACKS:
            attacked = attack_losers(pairs, lose_a, name, rewriter)
            conditions[name] = (attacked, binary_verdicts(
                judge_pairs(params, entry, attacked, layout, progress=False), ["prompt_id"]))
        for condition, (frame, verdicts) in conditions.items():
            frame = frame.assign(pair_id=frame.prompt_id, verdict=verdicts.reindex(frame.prompt_id).to_numpy())
            z = improvement_vectors(embed(frame.prompt, frame.response_a), embed(frame.prompt, frame.response_b),
                                    frame["verdict"])
            results = run_pu_audit(frame, z, pu_cfg)
            tables.append(consistency_table(results, **stats).assign(judge=judge, condition=condition))
            verdict_rows.append(frame[["pair_id", "qtype", "human", "verdict"]].assign(
                judge=judge, condition=condition,
                flipped_by_attack=frame["verdict"].to_numpy() != clean.reindex(frame.prompt_id).to_numpy()))
    return pd.concat(tables, ignore_index=True), pd.concat(verdict_rows, ignore_index=True)


def attack_flip_rates(verdicts: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """Share of verdicts each attack flipped, per judge, with n and a bootstrap CI."""
    rows = []
    for (judge, condition), g in verdicts[verdicts.condition != "clean"].groupby(["judge", "condition"]):
        est = mean_ci(g["flipped_by_attack"].astype(float).to_numpy(), n_boot=n_boot,
                      confidence=confidence, seed=seed)
        rows.append({"judge": judge, "attack": condition, "flip_rate": est.estimate,
                     "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n})
    return pd.DataFrame(rows)
