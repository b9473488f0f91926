"""Stage ``live_judge``: the judge a team uses (params.yaml's ``live_judge`` section), on real
pairs in both orders, through the bias battery beside the content-blind baselines, as
``judgeaudit audit-judge`` runs it from the command line. Its endpoint calls are kept in
``<root>/cache/live_judge`` so a rerun sends nothing already answered.

Drift (``judge_drift``, the scheduled deployment): the same judge re-judges the same pinned
pairs with fresh calls, into a folder of its own per run, and every figure is compared with
the previous run's (``audits.drift``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from judgeaudit.attacks.battery import battery_names, with_control
from judgeaudit.audits.drift import drift
from judgeaudit.audits.judge_screen import JudgeScreen, forest_plot, judge_screen
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Params
from judgeaudit.judging.battery import BatteryRun, run_battery
from judgeaudit.judging.live_items import pairs_to_judge
from judgeaudit.judging.live_pointwise import parse_ranges, pointwise_audit, score_histograms
from judgeaudit.judging.modes import verdict_mode
from judgeaudit.layout import Layout
from judgeaudit.models import ModelSpec, load_model
from judgeaudit.models.judge_spec import judge_identity, parse_judge
from judgeaudit.progress import Steps
from judgeaudit.report.judge_screen_report import write_screen_report
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import write_json, write_table

STAGE = Stage(
    name="live_judge",
    params=("seed", "audit.confidence", "judge", *MODELS, "live_judge"),
    deps=("models",),  # a judge named from params.yaml's models may be an embedded one
    outs=("live_judge",),
    section="live_judge",
)

log = logging.getLogger(__name__)
TABLES = {"verdicts": "live", "battery_pairs": "pairs"}


@dataclass
class LiveAudit:
    """One audit of a judge: its verdicts and battery (``run``), its screen, and its drift
    against the previous audit where one was compared."""

    run: BatteryRun
    screen: JudgeScreen
    drift: pd.DataFrame | None = None
    pointwise: tuple[pd.DataFrame, pd.DataFrame, list[dict]] | None = None  # judging.live_pointwise


def audit_live(model, name: str, mode: str, settings, items: pd.DataFrame, biases: list[str] | None,
               boot: BootstrapSettings, seed: int, steps: Steps | None = None) -> LiveAudit:
    """The judge ``model`` on ``items`` (``judging.benchmark.ITEM`` columns) in both orders and
    through ``biases`` of the battery (None: all), with its screen."""
    verdict_mode(mode, settings)  # an unknown mode fails before any call
    names = battery_names() if biases is None else with_control(list(biases))
    run = run_battery(model, name, mode, settings, items, names, seed=seed, steps=steps)
    screen = judge_screen(run.live, run.pairs, boot)
    screen.summary.update(seed=seed, battery_items=names)
    return LiveAudit(run, screen)


def write_calls(journal, out: Path) -> None:
    """An endpoint judge's recorded calls (``models.call_record.CallJournal``) as ``calls.parquet``."""
    if journal is not None and journal.rows:
        out.mkdir(parents=True, exist_ok=True)
        journal.table().to_parquet(out / "calls.parquet", index=False)


def write_live(audit: LiveAudit, out: Path, journal=None) -> Path:
    """The audit's tables, summary.json, battery.png and report.md in ``out`` (and an endpoint
    judge's recorded calls, from its ``journal``); the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    if journal is not None:
        audit.screen.summary.update(calls=journal.counts(), endpoint_versions=journal.versions(),
                                    endpoint_drift=len(journal.versions()) > 1)
    write_calls(journal, out)
    write_table(audit.run.live, out / "verdicts.parquet")
    write_table(audit.run.pairs, out / "battery_pairs.parquet")
    write_table(audit.screen.battery, out / "battery.parquet")
    write_table(audit.screen.baselines, out / "baselines.parquet")
    if audit.drift is not None:
        write_table(audit.drift, out / "drift.parquet")
        audit.screen.summary["drift"] = audit.drift.to_dict("records")
    if audit.pointwise is not None:
        correlations, scores, chosen = audit.pointwise
        write_table(correlations, out / "score_correlations.parquet")
        write_table(scores, out / "scores.parquet")
        score_histograms(scores, out / "scores.png")
        audit.screen.summary["pointwise"] = {"contrastive_decoding": chosen, "spearman": correlations[
            correlations["kind"] == "spearman"][["score_range", "method", "estimate", "ci_low", "ci_high", "n"]]
            .to_dict("records")}
    write_json(audit.screen.summary, out / "summary.json")
    forest_plot(audit.screen.battery, out / "battery.png")
    return write_screen_report(audit.screen, out / "report.md")


def previous(out: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The verdicts and battery pairs of the audit in ``out``, where there is one."""
    paths = [out / f"{t}.parquet" for t in TABLES]
    if not all(p.is_file() for p in paths):
        return None
    return tuple(pd.read_parquet(p) for p in paths)  # type: ignore[return-value]


def compare_with(audit: LiveAudit, before: tuple[pd.DataFrame, pd.DataFrame], boot: BootstrapSettings,
                 label: str) -> None:
    """Set ``audit``'s drift against the earlier audit ``before`` (``previous``), named ``label``."""
    audit.drift = drift(before[0], audit.run.live, before[1], audit.run.pairs, boot)
    audit.screen.summary["drift_against"] = label


def live_spec(params: Params, root: Path, calls: Path) -> ModelSpec:
    """The spec of the section's judge, its endpoint calls kept under ``calls``."""
    section = params.live_judge
    named = {n: params.spec_for(n, root / "models") for n in params.models}
    spec = parse_judge(section.judge, base_url=section.base_url, api_key_env=section.api_key_env, named=named,
                       concurrency=section.concurrency, chat_template=section.prompt_format)
    return spec.model_copy(update={"response_cache": str(calls)}) if spec.backend == "openai" else spec


def audit_section(params: Params, root: Path, calls: Path, steps: Steps | None = None) -> tuple[LiveAudit, object]:
    """The ``live_judge`` section's audit, its endpoint calls kept under ``calls``; and the
    judge's call journal (None for a local judge)."""
    section = params.live_judge
    spec = live_spec(params, root, calls)
    items, notes = pairs_to_judge([(d.source, d.path) for d in section.data], section.limit, params.seed)
    boot = BootstrapSettings(section.n_boot, params.audit.confidence, params.seed)
    model = load_model(spec, name=section.judge)
    audit = audit_live(model, section.judge, section.mode, params.judge, items, section.biases, boot, params.seed,
                       steps)
    audit.screen.summary.update(identity=judge_identity(spec), notes=notes)
    if section.ranges:
        assistant = None
        if section.assistant is not None:
            named = {n: params.spec_for(n, root / "models") for n in params.models}
            assistant = load_model(parse_judge(section.assistant, base_url=section.base_url, named=named,
                                               api_key_env=section.api_key_env), name=section.assistant)
        audit.pointwise = pointwise_audit(model, items, parse_ranges(",".join(section.ranges)), boot, assistant)
    return audit, getattr(model, "journal", None)


def judge_drift(params: Params, root: Path, stamp: str | None = None) -> tuple[Path, pd.DataFrame | None]:
    """Re-judge the section's pairs with fresh calls into ``<root>/live_judge_drift/<stamp>``
    and compare every figure with the latest earlier run of the same judge there:
    (the run's folder, its drift table; None for the first run)."""
    base = root / "live_judge_drift"
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = base / stamp
    audit, journal = audit_section(params, root, out / "calls")
    identity = audit.screen.summary["identity"]
    earlier = sorted(p for p in base.glob("*") if p.is_dir() and p.name < stamp and (p / "summary.json").is_file()
                     and _identity(p) == identity)
    if earlier and (before := previous(earlier[-1])) is not None:
        boot = BootstrapSettings(params.live_judge.n_boot, params.audit.confidence, params.seed)
        compare_with(audit, before, boot, earlier[-1].name)
    write_live(audit, out, journal)
    return out, audit.drift


def _identity(folder: Path) -> str | None:
    import json

    return json.loads((folder / "summary.json").read_text()).get("identity")


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "live_judge"
    audit, journal = audit_section(params, layout.root, layout.root / "cache" / "live_judge", steps=pool.bar)
    write_live(audit, out, journal)
    for note in audit.screen.summary.get("notes", []):
        log.warning(note)
    return {"found": audit.screen.summary["found"], "accuracy": audit.screen.summary.get("accuracy")}
