"""Stage ``pu``: the PU audit of the embedded judges on known-quality pairs, clean and under
attack. The roster's judges are dealt into groups of about equal work, one per worker
process, each group one unit; the groups' tables are merged in the roster's order.

Known-quality pairs (the correct answer vs a degraded one, same house style, random
position) stand in for human-labelled comparisons. Every judge gives verdicts in both
orders (ties excluded); then each presentation attack is applied to the response the
judge made lose, the judge re-judges, and the PU audit runs again, its verified
positives taken from the clean verdicts, to see whether it recovers the consistency
the attack cost."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from judgeaudit import resolve
from judgeaudit.attacks.presentation import ATTACKS
from judgeaudit.audits.pu_audit import (OURS, PAPER, PUConfig, consistency_table, definitions_of,
                                        improvement_vectors, pca_2d, run_pu_audit, sensitivity as pu_sensitivity,
                                        suspect_auc)
from judgeaudit.audits.pu_verdicts import one_verdict
from judgeaudit.audits.stats import mean_ci
from judgeaudit.config import Params
from judgeaudit.generation.corpus import degrade, make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.judging.student_pairs import attack_losers, judge_pairs, load_judge
from judgeaudit.layout import Layout
from judgeaudit.report.paper_rows import write_paper_rows
from judgeaudit.report.pu_report import default_plots, pu_paper_rows
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import publish, write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json

STAGE = Stage(
    name="pu",
    params=(*MODELS, "leakage", "judge", "audit", "pu", "attacks"),
    deps=("models",),
    outs=("pu",),
    section="pu",
    pool=True,
)


if TYPE_CHECKING:
    from judgeaudit.models.encoder import Encoder


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


def decisive_verdicts(judgments: pd.DataFrame) -> pd.Series:
    """Per prompt_id: "A"/"B" from both orders (a split keeps the first order's), or
    "tie" / "unparseable" where no order decided; those are excluded, as in the paper,
    rather than read as "A"."""
    wide = judgments.pivot_table(index="prompt_id", columns="order", values="verdict", aggfunc="first")
    swap = {"A": "B", "B": "A"}  # the BA order's verdict back onto the canonical labelling
    return pd.Series([one_verdict(a, swap.get(b, b)) for a, b in zip(wide["AB"], wide["BA"])], index=wide.index)


def judge_groups(params: Params, layout: Layout, n: int) -> list[list[str]]:
    """The roster's judges dealt into at most ``n`` groups of about equal work (the
    largest models dealt first), each an independent part of the stage."""
    entries = resolve.judges(params, layout.models)
    weight = {e.name: e.spec.weight_bytes for e in entries}
    groups: list[list[str]] = [[] for _ in range(max(1, min(n, len(entries))))]
    for name in sorted(weight, key=lambda j: -weight[j]):
        min(groups, key=lambda g: sum(weight[j] for j in g)).append(name)
    return groups


def judged_frames(params: Params, layout: Layout, judges: list[str] | None = None
                  ) -> tuple[dict[tuple[str, str], pd.DataFrame], pd.DataFrame]:
    """({(judge, condition): the pairs a judge decided, clean and after each attack on the
    response it made lose, with the clean verdict beside}, per-pair verdicts of all);
    ``judges``: those of the roster only."""
    pairs = known_quality_pairs(params)
    rewriter = resolve.rewriter(params, layout.models)
    frames, verdict_rows = {}, []
    for entry in resolve.judges(params, layout.models):
        if judges is not None and entry.name not in judges:
            continue
        judge, model = entry.name, load_judge(entry)
        clean = decisive_verdicts(judge_pairs(entry, pairs, params.judge, params.seed, model=model))
        conditions = {"clean": (pairs, clean)}
        lose_a = clean.reindex(pairs.prompt_id).to_numpy() == "B"
        for name in ATTACKS:
            attacked = attack_losers(pairs, lose_a, name, rewriter)
            conditions[name] = (attacked, decisive_verdicts(
                judge_pairs(entry, attacked, params.judge, params.seed, model=model)))
        for condition, (frame, verdicts) in conditions.items():
            frame = frame.assign(pair_id=frame.prompt_id, verdict=verdicts.reindex(frame.prompt_id).to_numpy(),
                                 clean_verdict=clean.reindex(frame.prompt_id).to_numpy())
            verdict_rows.append(frame[["pair_id", "qtype", "human", "verdict"]].assign(
                judge=judge, condition=condition, clean_verdict=frame["clean_verdict"],
                flipped_by_attack=frame["verdict"] != frame["clean_verdict"]))
            decisive = frame["verdict"].isin(["A", "B"]) & frame["clean_verdict"].isin(["A", "B"])
            frames[judge, condition] = frame[decisive].reset_index(drop=True).assign(
                n_excluded=int((~decisive).sum()))
    return frames, pd.concat(verdict_rows, ignore_index=True)


def _embedder(encoder: Encoder):
    cache: dict[str, np.ndarray] = {}

    def embed(prompts: pd.Series, texts: pd.Series) -> np.ndarray:
        keys = [f"{p}\n\n{t}" for p, t in zip(prompts, texts)]
        missing = sorted({k for k in keys if k not in cache})
        if missing:
            cache.update(zip(missing, encoder.embed(missing)))
        return np.stack([cache[k] for k in keys])
    return embed


def audit_frames(frames: dict[tuple[str, str], pd.DataFrame], encoder: Encoder, cfg: PUConfig, stats: dict,
                 details: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(consistency per judge x condition x question type, per-item results, sensitivity)
    with one encoder. Under attack the verified positives are the same pairs' clean
    verdicts: only the unlabelled comparisons are attacked, as the paper adjusts.
    ``details``: also the per-item results and the sensitivity sweep."""
    embed = _embedder(encoder)
    tables, items, sens = [], [], []
    pairs = {key: (embed(f.prompt, f.response_a), embed(f.prompt, f.response_b)) for key, f in frames.items()}
    vectors = {key: improvement_vectors(*pairs[key], f["verdict"]) for key, f in frames.items()}
    for (judge, condition), frame in frames.items():
        z, verified, emb = vectors[judge, condition], None, pairs[judge, condition]
        if condition != "clean":
            clean = frames[judge, "clean"]
            at = pd.Index(clean["pair_id"]).get_indexer(frame["pair_id"])
            verified = (clean.iloc[at].reset_index(drop=True), vectors[judge, "clean"][at])
            emb = tuple(e[at] for e in pairs[judge, "clean"])  # the positives' source: the clean pairs
        results = run_pu_audit(frame, z, cfg, verified, emb)
        key = dict(judge=judge, condition=condition)
        tables.append(consistency_table(results, **stats).assign(
            **key, n_excluded=int(frame["n_excluded"].iat[0]),
            **{f"suspect_{k}": v for k, v in suspect_auc(results, **stats).items() if k != "n"}))
        if details:
            coords = pca_2d(z)
            items.append(results.merge(pd.DataFrame({"pair_id": frame["pair_id"], "pc1": coords[:, 0],
                                                     "pc2": coords[:, 1]}), on="pair_id").assign(**key))
            sens.append(pu_sensitivity(frame, z, cfg, confidence=stats["confidence"], verified=verified,
                                       pairs=emb).assign(**key))
    cat = (lambda parts: pd.concat(parts, ignore_index=True) if parts else pd.DataFrame())
    return cat(tables), cat(items), cat(sens)


def pu_stage(params: Params, layout: Layout, judges: list[str] | None = None) -> tuple[pd.DataFrame, ...]:
    """(consistency per judge x condition x question type, per-pair verdicts, per-item
    PU results of every split, sensitivity to p_ratio and the transport fraction, the
    overall consistency under each compared encoder); ``judges``: those of the roster
    only (a part of the stage: ``merge_parts`` joins them)."""
    from judgeaudit.models.encoder import Encoder  # torch: only where the audit embeds

    cfg = params.pu
    pu_cfg = PUConfig(p_ratio=cfg.p_ratio, eta=cfg.eta, n_splits=cfg.splits, seed=params.seed,
                      core_filter=cfg.core_filter, positives=cfg.positives)
    stats = dict(n_boot=params.audit.n_boot, confidence=params.audit.confidence, seed=params.seed)
    frames, verdicts = judged_frames(params, layout, judges)
    main = Encoder(cfg.encoder)
    table, items, sens = audit_frames(frames, main, pu_cfg, stats)
    named = pu_cfg.definitions
    compared = [table[table.qtype == "all"].assign(encoder=f"{cfg.encoder} (mean)", definitions=named)]
    other_defs = replace(pu_cfg, **(OURS if named == "paper" else PAPER))
    other, _, _ = audit_frames(frames, main, other_defs, stats, details=False)
    compared.append(other[other.qtype == "all"].assign(encoder=f"{cfg.encoder} (mean)",
                                                       definitions=other_defs.definitions))
    for choice in cfg.compare_encoders:
        path = params.spec_for(choice.path, layout.models).path if choice.path in params.models else choice.path
        other, _, _ = audit_frames(frames, Encoder(path, pooling=choice.pooling), pu_cfg, stats, details=False)
        compared.append(other[other.qtype == "all"].assign(encoder=f"{choice.name} ({choice.pooling})",
                                                           definitions=named))
    return table, verdicts, items, sens, pd.concat(compared, ignore_index=True)


def merge_parts(parts: list[tuple[pd.DataFrame, ...]], params: Params, layout: Layout) -> tuple[pd.DataFrame, ...]:
    """``pu_stage``'s tables from its parts (one per group of judges), rows in the order
    the whole stage gives them: per encoder (the compared table), then per roster judge."""
    order = {e.name: k for k, e in enumerate(resolve.judges(params, layout.models))}
    merged = []
    for frames in zip(*parts):
        frame = pd.concat(frames, ignore_index=True)
        key = frame["judge"].map(order).to_numpy()
        if "encoder" in frame:
            label = frame["encoder"] + " / " + frame.get("definitions", "")
            encoders = {e: k for k, e in enumerate(dict.fromkeys(label))}
            key = key + len(order) * label.map(encoders).to_numpy()
        # stable: the rows of one judge keep their order
        merged.append(frame.iloc[np.argsort(key, kind="stable")].reset_index(drop=True))
    return tuple(merged)


def attack_flip_rates(verdicts: pd.DataFrame, *, n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """Share of decisive verdicts (A/B before and after) each attack flipped, per judge,
    with n and a bootstrap CI."""
    rows = []
    decisive = verdicts["verdict"].isin(["A", "B"]) & verdicts["clean_verdict"].isin(["A", "B"])
    attacked = verdicts[decisive & (verdicts.condition != "clean")]
    for (judge, condition), g in attacked.groupby(["judge", "condition"]):
        est = mean_ci(g["flipped_by_attack"].astype(float).to_numpy(), n_boot=n_boot,
                      confidence=confidence, seed=seed)
        rows.append({"judge": judge, "attack": condition, "flip_rate": est.estimate,
                     "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n})
    return pd.DataFrame(rows)


def pu_audit(params: Params, layout: Layout, judges: list[str]) -> tuple[pd.DataFrame, ...]:
    """The stage's tables for ``judges``."""
    return pu_stage(params, layout, judges)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    layout.pu.mkdir(parents=True, exist_ok=True)
    # as many groups as the pool has workers (scale.processes)
    groups = judge_groups(params, layout, pool.workers)
    futures = [pool.submit(pu_audit, params=params, layout=layout, judges=group) for group in groups]
    parts = [f.result() for f in futures]
    table, verdicts, items, sens, encoders = merge_parts(parts, params, layout)
    table = publish(table, "pu_consistency", "pu", layout.pu / "consistency.parquet", layout)
    for frame, name in ((verdicts, "verdicts"), (items, "items"), (sens, "sensitivity"),
                        (encoders, "encoders")):
        write(frame, layout.pu / f"{name}.parquet")
    a = params.audit
    flips = attack_flip_rates(verdicts, n_boot=a.n_boot, confidence=a.confidence, seed=params.seed)
    overall = table[table.qtype == "all"]
    plots = default_plots(table, items, sens, params.pu.eta, layout.pu)
    named = definitions_of(params.pu.core_filter, params.pu.positives)
    judges = [j for group in groups for j in group if j in params.models]
    embedded = params.all_built(judges)
    write_paper_rows(pu_paper_rows(items, sens, definitions=named, seed=params.seed, n_boot=a.n_boot,
                                   confidence=a.confidence, embedded=embedded), layout.pu)
    summary = {"consistency": overall.to_dict("records"), "attack_flip_rates": flips.to_dict("records"),
               "sensitivity": sens.to_dict("records"), "encoders": encoders.to_dict("records"),
               "plots": {k: v.name for k, v in plots.items()}}
    write_json(summary, layout.pu / "summary.json")
    return {"judges": int(overall.judge.nunique()), "conditions": sorted(set(overall.condition))}
