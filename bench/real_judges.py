"""The whole audit of every real source in ../shared/data (LLMBar, PandaLM, JudgeBench):
read, report card with 1,000-resample bootstrap CIs, published figures recomputed, PU
audit with its self-check. Prints the time per source and per step, and rows per second.

The PU audit embeds every response once with a frozen encoder; embeddings are cached on
disk (as the DVC stage does), so the first pass, which fills the cache, is timed apart
from the audit itself:

    python bench/real_judges.py [--data ../shared/data] [--n-boot 1000] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from judgeaudit.audits.judge_quality import report_card
from judgeaudit.audits.pu_audit import PUConfig
from judgeaudit.audits.pu_verdicts import binary_items, pu_audit_verdicts, texts_for
from judgeaudit.audits.reproduction import reproduce_published
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.stages.real_judges import VerdictAuditSettings, make_embedder, pu_subset
from judgeaudit.sources import read_source

PU_STRATEGIES = {"llmbar": ["Vanilla"]}  # as params.yaml's default stage


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--cache-dir", help="embedding cache (default: a fresh temporary folder)")
    args = p.parse_args()
    cache = Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix="judgeaudit-bench-"))
    settings = VerdictAuditSettings(bootstrap=BootstrapSettings(args.n_boot, 0.95, 0), pu=PUConfig(seed=0),
                                    pu_strategies=PU_STRATEGIES, cache_dir=cache)
    embed = make_embedder(settings)
    rows, total = [], 0.0
    for name in ("llmbar", "pandalm", "judgebench"):
        path = Path(args.data) / name
        if not path.is_dir():
            print(f"{name}: skipped, {path} is absent")
            continue
        t0 = time.perf_counter()
        table, _ = read_source(name, path)
        t1 = time.perf_counter()
        pu_table = pu_subset(table[table["label"].isin(["1", "2"])], PU_STRATEGIES)
        items, _ = binary_items(pu_table)
        texts = sorted(set(texts_for(items, "response_a")) | set(texts_for(items, "response_b")))
        embed(texts)  # fills the cache: the one-off cost, reported apart
        t2 = time.perf_counter()
        card = report_card(table, settings.bootstrap)
        t3 = time.perf_counter()
        reproduce_published(table)
        t4 = time.perf_counter()
        pu, _ = pu_audit_verdicts(pu_table, embed, settings.pu, settings.bootstrap, folds=settings.pu_folds)
        t5 = time.perf_counter()
        audit = (t1 - t0) + (t5 - t2)
        total += audit
        rows.append((name, len(table), len(card), t1 - t0, t3 - t2, t4 - t3, t5 - t4, audit, len(texts), t2 - t1))
    print(f"\nbootstrap: {args.n_boot} resamples per CI; PU: {settings.pu.n_splits} splits, "
          f"{settings.pu_folds}-fold self-check, strategies {PU_STRATEGIES}")
    print(f"{'source':<11}{'rows':>8}{'figures':>9}{'read s':>8}{'card s':>8}{'repro s':>8}{'PU s':>7}"
          f"{'audit s':>9}{'rows/s':>9}   embedding (cold, once)")
    for name, n, figs, read, card_s, rep_s, pu_s, audit, n_texts, emb in rows:
        print(f"{name:<11}{n:>8}{figs:>9}{read:>8.1f}{card_s:>8.1f}{rep_s:>8.1f}{pu_s:>7.1f}{audit:>9.1f}"
              f"{n / audit:>9.0f}   {n_texts} texts in {emb:.1f} s")
    n_all = sum(r[1] for r in rows)
    print(f"{'all':<11}{n_all:>8}{'':>9}{'':>8}{'':>8}{'':>8}{'':>7}{total:>9.1f}{n_all / max(total, 1e-9):>9.0f}"
          f"   (goal: under 60 s with warm embeddings)")


if __name__ == "__main__":
    main()
