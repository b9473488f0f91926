"""Stage ``real_judges`` (and ``judgeaudit audit-verdicts``): recorded verdicts of real
judges on public benchmarks read into the general judgment table, then the report card,
the sources' own published figures recomputed, paired comparisons of the judges on the same
pairs, the alternative annotator test where items carry several human labels, selective
evaluation (trust or escalate), and the PU audit with its self-check. A source whose path is
absent is noted and skipped, never an error. The stage runs in its own process, its steps
counted on the stage's bar."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.audits.alt_test import AltTestSettings, alt_test
from judgeaudit.audits.error_correlation import error_correlation
from judgeaudit.audits.judge_comparison import (COLUMNS as COMPARISON_COLUMNS, compare_judges,
                                                compare_strategies)
from judgeaudit.audits.judge_quality import ALL, pooled, report_card
from judgeaudit.audits.juries import compare_juries, juries, jury_card
from judgeaudit.audits.pu_audit import PUConfig
from judgeaudit.audits.pu_verdicts import pu_audit_verdicts
from judgeaudit.audits.reproduction import reproduce_published
from judgeaudit.audits.selective import SelectiveSettings, reliability, selective
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Params, RealJudgesPU
from judgeaudit.layout import Layout
from judgeaudit.progress import Steps, done, each, plan
from judgeaudit.sources import read_source
from judgeaudit.sources.judgment_table import COLUMNS
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.pool import Pool

STAGE = Stage(
    name="real_judges",
    params=("seed", "audit.confidence", "real_judges"),
    outs=("real_judges",),
    section="real_judges",
)


MIN_PAIRS = 30  # below this, the headline gives no verdict: a CI on fewer pairs says little


PU_DEFAULTS = RealJudgesPU()  # the encoder and its reach when params.yaml names none: one definition


@dataclass(frozen=True)
class VerdictAuditSettings:
    """What the audit of recorded verdicts needs, resolved from params or the CLI."""

    bootstrap: BootstrapSettings = BootstrapSettings()
    pu: PUConfig | None = PUConfig()
    pu_folds: int = 5
    pu_strategies: dict[str, list[str]] = field(default_factory=dict)  # per source; absent: all
    encoder: str = PU_DEFAULTS.encoder
    max_length: int = PU_DEFAULTS.max_length
    cache_dir: Path | None = None  # embeddings kept here between runs (None: not kept)
    base_strategy: dict[str, str] | None = None  # per source; None: judge_comparison.BASE_STRATEGY
    alt_test: AltTestSettings = AltTestSettings()
    selective: SelectiveSettings = SelectiveSettings()


@dataclass
class VerdictAudit:
    judgments: pd.DataFrame  # the general judgment table
    card: pd.DataFrame  # judge_quality: one row per figure
    reproduction: pd.DataFrame  # published figures against ours
    pu: pd.DataFrame  # PU consistency per group and question type, with the self-check
    files: pd.DataFrame  # per input file: rows read, rejected (why), unparseable
    notes: list[str]
    comparison: pd.DataFrame = field(default_factory=pd.DataFrame)  # judge vs judge on the same pairs
    strategies: pd.DataFrame = field(default_factory=pd.DataFrame)  # each judge's strategies vs its base
    juries: pd.DataFrame = field(default_factory=pd.DataFrame)  # majority votes of the judges: their report card
    jury_verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)  # their verdicts (judgment table)
    jury_comparison: pd.DataFrame = field(default_factory=pd.DataFrame)  # each jury vs the best judge, best member
    jury_members: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (source, jury): its judges
    error_correlation: pd.DataFrame = field(default_factory=pd.DataFrame)  # which judges err on the same pairs
    alt_test: pd.DataFrame = field(default_factory=pd.DataFrame)  # can a judge replace a human annotator
    selective: pd.DataFrame = field(default_factory=pd.DataFrame)  # trust or escalate: the pairs a judge keeps
    reliability: pd.DataFrame = field(default_factory=pd.DataFrame)  # its confidence's reliability diagram
    attack_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)  # a live judge's attacked pairs
    attacks: pd.DataFrame = field(default_factory=pd.DataFrame)  # their flip and fooled rates


def read_sources(sources: dict[str, str], steps: Steps | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(the judgment table of every source present, the per-file read report, notes); a
    step of ``steps`` per source."""
    frames, files, notes = [], [], []
    for name, path in each(steps, sources.items()):
        if not Path(path).exists():
            notes.append(f"{name}: skipped, {path} is absent (see the README for the data)")
            continue
        table, report = read_source(name, path)
        frames.append(table)
        files.append(report.frame().assign(source=name))
        notes += [f"{name}: {n}" for n in report.notes]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return table, (pd.concat(files, ignore_index=True) if files else pd.DataFrame()), notes


def pu_subset(table: pd.DataFrame, strategies: dict[str, list[str]]) -> pd.DataFrame:
    keep = pd.Series(True, index=table.index)
    for source, chosen in strategies.items():
        keep &= (table["source"] != source) | table["strategy"].isin(chosen)
    return table[keep]


def make_embedder(settings: VerdictAuditSettings, steps: Steps | None = None
                  ) -> Callable[[list[str]], np.ndarray]:
    """The PU audit's F(x, o): the frozen encoder, through the on-disk cache (a step of
    ``steps`` per batch it encodes)."""
    from importlib.metadata import version

    from judgeaudit.models.embedding_cache import EmbeddingCache
    from judgeaudit.models.encoder import Encoder, weights_identity
    from judgeaudit.report.machine import cpu_model

    # the vectors' bits: the weights as they are now (a checkpoint rebuilt in place must not
    # be served its old vectors), the truncation, and what rounds them (torch, the CPU)
    identity = "|".join([settings.encoder, str(settings.max_length), weights_identity(settings.encoder),
                         f"torch {version('torch')}", cpu_model()])
    cache = EmbeddingCache(lambda: Encoder(settings.encoder, max_length=settings.max_length), identity,
                           settings.cache_dir)
    return lambda texts: cache.embed(texts, steps)


def audit_verdicts(table: pd.DataFrame, settings: VerdictAuditSettings, *,
                   embed: Callable[[list[str]], np.ndarray] | None = None,
                   files: pd.DataFrame | None = None, notes: list[str] | None = None,
                   steps: Steps | None = None) -> VerdictAudit:
    """Every audit the judgment table's inputs allow; ``steps``: the report card, the
    published figures, the judges and their strategies compared, then the PU audit's encoder
    batches and groups."""
    notes = list(notes or [])
    plan(steps, 3)
    card = report_card(table, settings.bootstrap) if len(table) else pd.DataFrame()
    done(steps)
    reproduction = reproduce_published(table) if len(table) else pd.DataFrame()
    done(steps)
    chosen = headline(card).rename(columns={"best_strategy": "strategy"})
    comparison = (compare_judges(table, settings.bootstrap, chosen) if len(chosen)
                  else pd.DataFrame(columns=COMPARISON_COLUMNS))
    strategies = (compare_strategies(table, settings.bootstrap, settings.base_strategy) if len(table)
                  else pd.DataFrame())
    jury = _juries(table, chosen, settings.bootstrap)
    errors = error_correlation(table, settings.bootstrap, chosen) if len(chosen) else pd.DataFrame()
    alt = alt_test(table, settings.alt_test, settings.bootstrap) if len(table) else pd.DataFrame()
    kept = selective(table, chosen, settings.selective, settings.bootstrap) if len(chosen) else pd.DataFrame()
    bins = reliability(table, chosen, settings.selective, settings.bootstrap) if len(chosen) else pd.DataFrame()
    done(steps)
    pu = pd.DataFrame()
    labelled = table[table["label"].isin(["1", "2"])] if len(table) else table
    if settings.pu is not None and len(labelled):
        pu, _ = pu_audit_verdicts(pu_subset(labelled, settings.pu_strategies),
                                  embed or make_embedder(settings, steps), settings.pu, settings.bootstrap,
                                  folds=settings.pu_folds, steps=steps)
    return VerdictAudit(table, card, reproduction, pu, files if files is not None else pd.DataFrame(), notes,
                        comparison, strategies=strategies, error_correlation=errors, alt_test=alt,
                        selective=kept, reliability=bins, **jury)


def _juries(table: pd.DataFrame, chosen: pd.DataFrame, settings: BootstrapSettings) -> dict:
    """VerdictAudit's jury fields: the juries of each source's judges in their headline strategies."""
    if chosen.empty:
        return {}
    verdicts, members = juries(table, chosen)
    if verdicts.empty:
        return {}
    return {"juries": jury_card(verdicts, settings), "jury_verdicts": verdicts, "jury_members": members,
            "jury_comparison": compare_juries(table, verdicts, members, chosen, settings)}


def _published(*values: float) -> str:
    return "" if any(pd.isna(v) for v in values) else f" (published {', '.join(f'{v:.2f}' for v in values)})"


def _own_figure(source: str, rows: pd.DataFrame) -> str:
    """One judge x strategy's headline figure as its benchmark reports it, from the
    reproduction rows; "" where the benchmark has none."""
    if source == "judgebench":  # the score per response model's pairs, over all categories
        rows = rows[(rows.figure == "score_pct") & rows.subset.str.endswith("/all")]
        return "; ".join(f"score {r.ours:.2f} on {r.subset.removesuffix('/all')}{_published(r.published)}"
                         for r in rows.itertuples())
    if source == "pandalm":
        rows = rows[rows.figure == "accuracy"]
        return "; ".join(f"accuracy {r.ours:.2f}{_published(r.published)}" for r in rows.itertuples())
    if source == "llmbar":  # the paper's columns: Natural, and the mean of the four adversarial subsets
        rows = rows[rows.figure == "correct_average_pct"]
        natural, adversarial = rows[rows.subset == "Natural"], rows[rows.subset.str.startswith("Adversarial/")]
        if len(natural) != 1 or adversarial.subset.nunique() != 4:
            return ""
        return (f"Natural {natural.ours.iloc[0]:.2f}, Adversarial mean {adversarial.ours.mean():.2f}"
                + _published(natural.published.iloc[0], adversarial.published.mean(skipna=False)))
    return ""


def own_figures(reproduction: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    """Per (source, judge, strategy): the benchmark's own headline figure, ours beside the
    published value. JudgeBench's score counts a pair when more of its two orders favour the
    right response, so it sits below the per-order accuracy of an inconsistent judge; LLMBar
    reports Natural and the unweighted mean of its adversarial subsets, not a pooled figure."""
    if reproduction.empty:
        return {}
    figures = {key: _own_figure(key[0], rows)
               for key, rows in reproduction.groupby(["source", "judge", "strategy"], sort=False)}
    return {key: text for key, text in figures.items() if text}


def headline(card: pd.DataFrame, reproduction: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (source, judge): its most accurate strategy on the pooled subset, the
    figures a person reads first, the biases whose CI excludes no effect, a plain verdict, and
    the benchmark's own headline figure for that strategy where it publishes one."""
    own = own_figures(reproduction if reproduction is not None else pd.DataFrame())
    if card.empty:
        return pd.DataFrame()
    figures = pooled(card)
    wide = figures.pivot_table(index=["source", "subset", "judge", "strategy"], columns="metric",
                              values=["estimate", "ci_low", "ci_high", "n"], aggfunc="first")
    label_longer = figures[figures.judge == "label"].set_index(["source", "subset"])["estimate"]
    rows = []
    judges = wide[wide[("estimate", "accuracy")].notna()] if ("estimate", "accuracy") in wide else wide.iloc[:0]
    for (source, judge), grp in judges.groupby(level=["source", "judge"], sort=True):
        acc = grp[("estimate", "accuracy")]
        best = acc.idxmax()
        r = grp.loc[best]
        subset, strategy = best[1], best[3]
        biases = []
        if ("ci_low", "position_bias") in r and not np.isnan(r[("ci_low", "position_bias")]):
            lo, hi = r[("ci_low", "position_bias")], r[("ci_high", "position_bias")]
            if lo > 0 or hi < 0:
                biases.append(f"position ({'first' if lo > 0 else 'second'} shown wins "
                              f"{r[('estimate', 'position_bias')]:+.2f})")
        ref = label_longer.get((source, subset), 0.5)
        lo, hi = r.get(("ci_low", "longer_chosen"), np.nan), r.get(("ci_high", "longer_chosen"), np.nan)
        if not np.isnan(lo) and (lo > ref or hi < ref):
            biases.append(f"length (picks the longer {r[('estimate', 'longer_chosen')]:.0%}, label {ref:.0%})")
        if r.get(("estimate", "unparseable_rate"), 0) > 0.05:
            biases.append(f"unparseable {r[('estimate', 'unparseable_rate')]:.0%}")
        a_lo = r[("ci_low", "accuracy")]
        if r[("n", "accuracy")] < MIN_PAIRS:
            verdict = f"too few labelled pairs to tell (n < {MIN_PAIRS})"
        elif a_lo >= 0.8 and not biases:
            verdict = "reliable on this benchmark"
        elif r[("ci_high", "accuracy")] < 0.6:
            verdict = "not reliable: close to chance"
        else:
            verdict = "use with care" + (": " + "; ".join(biases) if biases else ": accuracy below 0.8")
        agree = r.get(("estimate", "positional_agreement"), np.nan)
        rows.append({"source": source, "judge": judge, "best_strategy": strategy, "strategies": len(grp),
                     "accuracy": r[("estimate", "accuracy")], "accuracy_ci_low": a_lo,
                     "accuracy_ci_high": r[("ci_high", "accuracy")], "n": int(r[("n", "accuracy")]),
                     "positional_agreement": agree,
                     "positional_agreement_ci_low": r.get(("ci_low", "positional_agreement"), np.nan),
                     "positional_agreement_ci_high": r.get(("ci_high", "positional_agreement"), np.nan),
                     "significant_biases": "; ".join(biases) or "none found", "verdict": verdict,
                     "benchmark_figure": own.get((source, judge, strategy), "")})
    return pd.DataFrame(rows)


def summary(result: VerdictAudit) -> dict:
    """What the stage reports as metrics: rows read, published figures reproduced, verdicts."""
    rep = result.reproduction
    published = rep[rep["match"].notna()] if len(rep) else rep
    reproduced = {s: {"figures": int(len(g)), "reproduced": int(g["match"].astype(bool).sum())}
                  for s, g in published.groupby("source")} if len(published) else {}
    pu = result.pu[result.pu["qtype"] == "all"] if len(result.pu) else result.pu
    compared = {s: {"judge_pairs": int(len(g)), "differ": int(g["significant"].sum())}
                for s, g in result.comparison.groupby("source")} if len(result.comparison) else {}
    against_base = {s: {"strategies": int(len(g)), "help": int((g.significant & (g.difference > 0)).sum()),
                        "hurt": int((g.significant & (g.difference < 0)).sum())}
                    for s, g in result.strategies.groupby("source")} if len(result.strategies) else {}
    return {"rows": int(len(result.judgments)),
            "sources": sorted(result.judgments["source"].unique().tolist()) if len(result.judgments) else [],
            "judges": int(result.judgments[["source", "judge", "strategy"]].drop_duplicates().shape[0])
            if len(result.judgments) else 0,
            "published_figures": reproduced,
            "pu_recommendations": pu[["source", "judge", "strategy", "cons_orig", "cons_adj", "check_gain",
                                      "recommendation"]].to_dict("records") if len(pu) else [],
            "judge_comparisons": compared, "strategy_comparisons": against_base, "juries": jury_summary(result),
            "errors_together": errors_together(result.error_correlation),
            "replaces_annotators": replaces_annotators(result.alt_test),
            "trust_or_escalate": trust_or_escalate(result.selective),
            "headline": headline(result.card, result.reproduction).to_dict("records"), "notes": result.notes}


def jury_summary(result: VerdictAudit) -> list[dict]:
    """Per jury: its members, its pooled accuracy with CI and n, and its comparisons (``against``:
    the judge, the jury's accuracy minus the judge's, Holm's p, whether they differ)."""
    card = pooled(result.juries) if len(result.juries) else result.juries
    accuracy = card[card.metric == "accuracy"].set_index(["source", "judge"]) if len(card) else card
    cmp, out = result.jury_comparison, []
    for (source, jury), members in result.jury_members.items():
        row = {"source": source, "jury": jury, "members": members}
        if (source, jury) in accuracy.index:
            acc = accuracy.loc[(source, jury)]
            row |= {k: float(acc[k]) for k in ("estimate", "ci_low", "ci_high")} | {"n": int(acc["n"])}
        mine = cmp[(cmp.source == source) & ((cmp.judge_a == jury) | (cmp.judge_b == jury))]
        row["against"] = [{"judge": r.judge_b if r.judge_a == jury else r.judge_a,
                           "difference": float(r.difference if r.judge_a == jury else -r.difference),
                           "p_holm": float(r.p_holm), "significant": bool(r.significant)} for r in mine.itertuples()]
        out.append(row)
    return out


def errors_together(correlation: pd.DataFrame) -> dict:
    """Per source: the pairs of judges, and the two whose errors go together most, with its CI."""
    out = {}
    for source, grp in correlation.groupby("source") if len(correlation) else ():
        top = grp.loc[grp.correlation.idxmax()]
        out[source] = {"judge_pairs": int(len(grp)), "most": [top.judge_a, top.judge_b],
                       **{k: float(top[k]) for k in ("correlation", "ci_low", "ci_high")}, "n": int(top.n)}
    return out


def replaces_annotators(alt: pd.DataFrame) -> list[dict]:
    """Per judge the alt-test ran on: whether it passes, its winning rate over the annotators,
    the advantage probability with its CI, and the smallest epsilon at which it would pass."""
    if alt.empty:
        return []
    keys = ["source", "judge", "strategy", "order"]
    figures = ("annotators", "epsilon", "passed", "winning_rate", "advantage_prob", "ci_low", "ci_high",
               "epsilon_to_pass")
    judges = alt.groupby(keys, sort=True).agg(n=("n", "max"), **{c: (c, "first") for c in figures}).reset_index()
    records = judges.astype({"n": int, "annotators": int, "passed": bool}).to_dict("records")
    return [r | {"epsilon_to_pass": None if pd.isna(r["epsilon_to_pass"]) else r["epsilon_to_pass"]}
            for r in records]


def trust_or_escalate(kept: pd.DataFrame) -> list[dict]:
    """Per judge: its threshold (None: it escalates every pair), each metric of the selective evaluation
    over all its pairs with its CI and n, and ``by_subset``: its confidence's figures per subset."""
    def metrics(rows: pd.DataFrame) -> dict:
        return {r.metric: {"estimate": None if pd.isna(r.estimate) else float(r.estimate),
                           "ci_low": None if pd.isna(r.ci_low) else float(r.ci_low),
                           "ci_high": None if pd.isna(r.ci_high) else float(r.ci_high), "n": int(r.n)}
                for r in rows.itertuples()}

    out = []
    for (source, judge, strategy), grp in kept.groupby(["source", "judge", "strategy"], sort=True) if len(kept) else ():
        lam = float(grp.threshold.iloc[0])
        parts = grp[grp.subset != ALL]
        out.append({"source": source, "judge": judge, "strategy": strategy, "confidence": grp.confidence.iloc[0],
                    "alpha": float(grp.alpha.iloc[0]), "threshold": lam if np.isfinite(lam) else None,
                    **metrics(grp[grp.subset == ALL]),
                    "by_subset": {subset: metrics(rows) for subset, rows in parts.groupby("subset", sort=True)}})
    return out


def write_audit(result: VerdictAudit, out: Path, quarantine: Path) -> dict[str, Path]:
    """Validate the tables (Great Expectations), then write them, the summary and the report."""
    from judgeaudit.report.judge_report import write_judge_report
    from judgeaudit.schemas.validate import validate_table
    from judgeaudit.tables import write_json, write_table

    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    if len(result.judgments):
        validate_table(result.judgments, "judgment_table", str(out / "judgments.parquet"), quarantine_dir=quarantine)
        validate_table(result.card, "judge_quality", str(out / "judge_quality.parquet"), quarantine_dir=quarantine)
    checked = (("judge_comparison", result.comparison, "judge_comparison"),
               ("strategy_comparison", result.strategies, "strategy_comparison"),
               ("juries", result.juries, "judge_quality"), ("jury_verdicts", result.jury_verdicts, "judgment_table"),
               ("jury_comparison", result.jury_comparison, "judge_comparison"),
               ("error_correlation", result.error_correlation, "error_correlation"),
               ("alt_test", result.alt_test, "alt_test"), ("selective", result.selective, "selective"),
               ("reliability", result.reliability, "reliability"))
    for name, frame, suite in checked:
        if len(frame):
            validate_table(frame, suite, str(out / f"{name}.parquet"), quarantine_dir=quarantine)
    for name, frame in (("judgments", result.judgments), ("judge_quality", result.card),
                        ("reproduction", result.reproduction), *((n, f) for n, f, _ in checked),
                        ("pu_consistency", result.pu), ("files_read", result.files)):
        paths[name] = write_table(frame, out / f"{name}.parquet")
    if len(result.attack_pairs):  # judge-benchmark --attacks only
        paths["attack_pairs"] = write_table(result.attack_pairs, out / "attack_pairs.parquet")
        paths["attacks"] = write_table(result.attacks, out / "attacks.parquet")
    info = summary(result)
    paths["summary"] = write_json(info, out / "summary.json")
    paths["report"] = write_judge_report(report_tables(result, info), out, result.attacks)
    return paths


def report_tables(result: VerdictAudit, info: dict) -> dict:
    """What the judges' report shows (``judge_report.leaderboard_section``), from the audit and
    its ``summary``."""
    return {"card": result.card, "reproduction": result.reproduction, "pu": result.pu,
            "headline": pd.DataFrame(info["headline"]), "notes": result.notes, "comparison": result.comparison,
            "strategies": result.strategies, "errors": result.error_correlation, "alt_test": result.alt_test,
            "selective": result.selective, "reliability": result.reliability,
            "juries": {"card": result.juries, "comparison": result.jury_comparison, "summary": info["juries"]}}


def settings_from_params(params, cache_dir: Path | None) -> VerdictAuditSettings:
    """The stage's settings, resolved once from params.yaml."""
    section = params.real_judges
    pu, alt, sel = section.pu, section.alt_test, section.selective
    return VerdictAuditSettings(
        bootstrap=BootstrapSettings(section.n_boot, params.audit.confidence, params.seed),
        pu=PUConfig(p_ratio=pu.p_ratio, eta=pu.eta, n_splits=pu.splits, seed=params.seed) if pu else None,
        pu_folds=pu.folds if pu else 5, pu_strategies=dict(pu.strategies) if pu else {},
        encoder=(pu or PU_DEFAULTS).encoder, max_length=(pu or PU_DEFAULTS).max_length,
        cache_dir=cache_dir, alt_test=AltTestSettings(alt.epsilon, alt.q, alt.min_items),
        selective=SelectiveSettings(sel.alpha, sel.delta, sel.min_n, sel.splits))


def real_judges_stage(params, root: Path, steps: Steps | None = None) -> VerdictAudit:
    """Every source params.yaml names, audited; absent sources noted."""
    table, files, notes = read_sources(dict(params.real_judges.sources), steps)
    settings = settings_from_params(params, root / "cache" / "embeddings")
    return audit_verdicts(table, settings, files=files, notes=notes, steps=steps)


log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "real_judges"
    out.mkdir(parents=True, exist_ok=True)
    # its inputs are files outside the project: DVC decides reruns from the params naming them
    result = real_judges_stage(params, layout.root, steps=pool.bar)
    write_audit(result, out, layout.quarantine)
    info = summary(result)
    for note in result.notes:
        log.warning(note)
    return {"rows": info["rows"], "published_figures": info["published_figures"]}
