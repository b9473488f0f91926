"""Stage ``live_judge``: the judge a team uses (params.yaml's ``live_judge`` section), on real
pairs in both orders, through the bias battery beside the content-blind baselines, as
``judgeaudit audit-judge`` runs it from the command line. Its endpoint calls are journalled
in ``<root>/live_judge_calls``, an out DVC versions and keeps between runs (``persist``), so a
rerun, here or after ``dvc pull`` elsewhere, sends nothing already answered.

Drift (``judge_drift``, the scheduled deployment): the same judge re-judges the same pinned
pairs with fresh calls, into a folder of its own per run, and every figure is compared with
the previous run's (``audits.drift``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from judgeaudit.attacks.battery import battery_names, with_control
from judgeaudit.audits.bias_battery import self_preference
from judgeaudit.audits.drift import drift
from judgeaudit.audits.judge_screen import JudgeScreen, forest_plot, judge_screen
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Params
from judgeaudit.judging.battery import BatteryRun, run_battery
from judgeaudit.judging.benchmark import judge_items
from judgeaudit.judging.live_items import pairs_to_judge
from judgeaudit.judging.live_pointwise import parse_ranges, pointwise_audit, score_histograms
from judgeaudit.judging.modes import verdict_mode
from judgeaudit.judging.self_enhancement import self_enhancement_items
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
    outs=("live_judge", "live_judge_calls"),
    section="live_judge",
    persist=("live_judge_calls",),
)

log = logging.getLogger(__name__)
TABLES = {"verdicts": "live", "battery_pairs": "pairs"}
ROLES = ("judge", "reference", "assistant")  # who makes an endpoint call: calls.parquet's role


@dataclass
class LiveAudit:
    """One audit of a judge: its verdicts and battery (``run``), its screen, and its drift
    against the previous audit where one was compared."""

    run: BatteryRun
    screen: JudgeScreen
    drift: pd.DataFrame | None = None
    pointwise: tuple[pd.DataFrame, pd.DataFrame, list[dict]] | None = None  # judging.live_pointwise
    self_enhancement: tuple[pd.DataFrame, pd.DataFrame] | None = None  # self_enhancement(): table, verdicts
    reference: str | None = None  # the reference judge of self-enhancement


def self_enhancement(model, name: str, reference, reference_name: str, mode: str, settings, items: pd.DataFrame,
                     boot: BootstrapSettings, seed: int, max_new_tokens: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The judge ``model`` writes its own answer to each prompt of ``items`` (through its
    endpoint: the calls are its journal's), paired against another answer
    (``judging.self_enhancement``); the judge and ``reference`` each judge those pairs in both
    orders. (``audits.bias_battery.self_preference`` table, both judges' verdicts)."""
    pairs = self_enhancement_items(model, name, items, max_new_tokens=max_new_tokens, seed=seed)
    own = judge_items(model, name, mode, settings, pairs, seed=seed)
    theirs = judge_items(reference, reference_name, mode, settings, pairs, seed=seed)
    verdicts = pd.concat([own.assign(role="judge"), theirs.assign(role="reference")], ignore_index=True)
    return self_preference(own, theirs, boot), verdicts


def self_enhancement_summary(table: pd.DataFrame, reference: str | None) -> dict:
    """The overall rows of a ``self_preference`` table (``own_win_rate``,
    ``reference_win_rate``, ``self_preference`` with n, CI and found) and the reference judge."""
    whole = table[(table["source"] == "all") & (table["subset"] == "all")]
    whole = whole if len(whole) else table[table["subset"] == "all"]
    out: dict = {"reference": reference}
    for r in whole.itertuples():
        out[r.metric] = {"estimate": round(float(r.estimate), 6), "ci_low": round(float(r.ci_low), 6),
                         "ci_high": round(float(r.ci_high), 6), "n": int(r.n)}
        if r.metric == "self_preference":
            out[r.metric]["found"] = bool(r.found)
    return out


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


def role_calls(calls: Path, role: str) -> Path:
    """Where a role's endpoint calls are kept: the judge's in ``calls``, the reference's and
    the assistant's beside it (``calls_reference``, ``calls_assistant``)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    return calls if role == "judge" else calls.with_name(f"{calls.name}_{role}")


def recorded_spec(text: str, role: str, calls: Path, *, named: dict[str, ModelSpec] | None, base_url: str | None,
                  api_key_env: str, shared_url: bool = False, **fields) -> ModelSpec:
    """The spec of the judge ``text`` names (``models.judge_spec.parse_judge``) playing
    ``role``; an endpoint's calls recorded under ``role_calls(calls, role)``, so that a rerun
    asks nothing recorded and a replay nothing at all, whichever role makes the call.
    ``shared_url``: several roles share ``base_url``, which then goes to the ``openai:`` ones
    only (alone, a local judge given a base URL is an error)."""
    if shared_url and not text.startswith("openai:"):
        base_url = None
    spec = parse_judge(text, base_url=base_url, api_key_env=api_key_env, named=named, **fields)
    if spec.backend != "openai":
        return spec
    return spec.model_copy(update={"response_cache": str(role_calls(calls, role))})


def journals_of(models: dict[str, object]) -> dict[str, object]:
    """The call journals (``models.call_record.CallJournal``) of the endpoint models by role."""
    return {role: j for role, m in models.items() if m is not None and (j := getattr(m, "journal", None)) is not None}


def write_calls(journals: dict[str, object], out: Path) -> None:
    """Every role's recorded calls (``journals``: role -> ``CallJournal``) as one
    ``calls.parquet``, its ``role`` column naming judge, reference or assistant."""
    tables = [j.table().assign(role=role) for role, j in journals.items() if j is not None and j.rows]
    if tables:
        out.mkdir(parents=True, exist_ok=True)
        pd.concat(tables, ignore_index=True).to_parquet(out / "calls.parquet", index=False)


def write_live(audit: LiveAudit, out: Path, journals: dict[str, object] | None = None) -> Path:
    """The audit's tables, summary.json, battery.png and report.md in ``out`` (and the
    endpoint calls of every role, from ``journals``); the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    journals = journals or {}
    if (journal := journals.get("judge")) is not None:
        audit.screen.summary.update(calls=journal.counts(), endpoint_versions=journal.versions(),
                                    endpoint_drift=len(journal.versions()) > 1)
    if set(journals) - {"judge"}:
        audit.screen.summary["calls_by_role"] = {role: j.counts() for role, j in journals.items()}
    write_calls(journals, out)
    if audit.self_enhancement is not None:
        table, verdicts = audit.self_enhancement
        write_table(table, out / "self_enhancement.parquet")
        write_table(verdicts, out / "self_enhancement_verdicts.parquet")
        audit.screen.summary["self_enhancement"] = self_enhancement_summary(table, audit.reference)
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


class Earlier(NamedTuple):
    """An earlier audit's tables that drift compares with (None: not measured there)."""

    live: pd.DataFrame
    pairs: pd.DataFrame
    own: pd.DataFrame | None  # self-enhancement verdicts
    scores: pd.DataFrame | None  # pointwise scores


def previous(out: Path) -> Earlier | None:
    """The tables of the audit in ``out``, where there is one."""
    paths = [out / f"{t}.parquet" for t in TABLES]
    if not all(p.is_file() for p in paths):
        return None
    own, scores = (out / f"{t}.parquet" for t in ("self_enhancement_verdicts", "scores"))
    live, pairs = (pd.read_parquet(p) for p in paths)
    return Earlier(live, pairs, pd.read_parquet(own) if own.is_file() else None,
                   pd.read_parquet(scores) if scores.is_file() else None)


def compare_with(audit: LiveAudit, before: Earlier, boot: BootstrapSettings, label: str) -> None:
    """Set ``audit``'s drift against the earlier audit ``before`` (``previous``), named ``label``."""
    now_self = audit.self_enhancement[1] if audit.self_enhancement is not None else None
    now_scores = audit.pointwise[1] if audit.pointwise is not None else None
    audit.drift = drift(before.live, audit.run.live, before.pairs, audit.run.pairs, boot, before.own, now_self,
                        before.scores, now_scores)
    audit.screen.summary["drift_against"] = label


def live_spec(params: Params, root: Path, calls: Path, role: str = "judge") -> ModelSpec:
    """The spec of the section's judge (or its ``reference`` or ``assistant``), its endpoint
    calls kept under ``role_calls(calls, role)``."""
    section = params.live_judge
    named = {n: params.spec_for(n, root / "models") for n in params.models}
    text = {"judge": section.judge, "reference": section.self_enhancement, "assistant": section.assistant}[role]
    fields = {"concurrency": section.concurrency} if role == "judge" else {}
    shared = section.self_enhancement is not None or (section.assistant is not None and bool(section.ranges))
    return recorded_spec(text, role, calls, named=named, base_url=section.base_url, shared_url=shared,
                         api_key_env=section.api_key_env, chat_template=section.prompt_format, **fields)


def audit_section(params: Params, root: Path, calls: Path,
                  steps: Steps | None = None) -> tuple[LiveAudit, dict[str, object]]:
    """The ``live_judge`` section's audit, its endpoint calls kept under ``calls`` (and
    beside it, per role); and the call journals by role (none for a local judge)."""
    section = params.live_judge
    spec = live_spec(params, root, calls)
    items, notes = pairs_to_judge([(d.source, d.path) for d in section.data], section.limit, params.seed)
    boot = BootstrapSettings(section.n_boot, params.audit.confidence, params.seed)
    model = load_model(spec, name=section.judge)
    models: dict[str, object] = {"judge": model}
    audit = audit_live(model, section.judge, section.mode, params.judge, items, section.biases, boot, params.seed,
                       steps)
    audit.screen.summary.update(identity=judge_identity(spec), notes=notes)
    if section.self_enhancement is not None:
        ref_spec = live_spec(params, root, calls, "reference")
        models["reference"] = reference = load_model(ref_spec, name=section.self_enhancement)
        audit.self_enhancement = self_enhancement(model, section.judge, reference, section.self_enhancement,
                                                  section.mode, params.judge, items, boot, params.seed,
                                                  section.answer_tokens)
        audit.reference = judge_identity(ref_spec)
    if section.ranges:
        if section.assistant is not None:
            models["assistant"] = load_model(live_spec(params, root, calls, "assistant"), name=section.assistant)
        audit.pointwise = pointwise_audit(model, items, parse_ranges(",".join(section.ranges)), boot,
                                          models.get("assistant"))
    return audit, journals_of(models)


def judge_drift(params: Params, root: Path, stamp: str | None = None) -> tuple[Path, pd.DataFrame | None]:
    """Re-judge the section's pairs with fresh calls into ``<root>/live_judge_drift/<stamp>``
    and compare every figure with the latest earlier run of the same judge there:
    (the run's folder, its drift table; None for the first run)."""
    base = root / "live_judge_drift"
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = base / stamp
    audit, journals = audit_section(params, root, out / "calls")
    identity = audit.screen.summary["identity"]
    earlier = sorted(p for p in base.glob("*") if p.is_dir() and p.name < stamp and (p / "summary.json").is_file()
                     and _identity(p) == identity)
    if earlier and (before := previous(earlier[-1])) is not None:
        boot = BootstrapSettings(params.live_judge.n_boot, params.audit.confidence, params.seed)
        compare_with(audit, before, boot, earlier[-1].name)
    write_live(audit, out, journals)
    return out, audit.drift


def _identity(folder: Path) -> str | None:
    import json

    return json.loads((folder / "summary.json").read_text()).get("identity")


def stage_calls(root: Path) -> Path:
    """The judge's journal of the stage (the other roles' beside it, ``role_calls``); the
    journals an earlier version kept in the unversioned ``<root>/cache`` move there first."""
    calls = root / "live_judge_calls" / "calls"
    for role in ROLES:
        old, new = role_calls(root / "cache" / "live_judge", role), role_calls(calls, role)
        if old.exists() and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            old.rename(new)
            log.warning("moved the recorded calls %s to %s, where DVC versions them", old, new)
    return calls


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "live_judge"
    audit, journals = audit_section(params, layout.root, stage_calls(layout.root), steps=pool.bar)
    write_live(audit, out, journals)
    for note in audit.screen.summary.get("notes", []):
        log.warning(note)
    return {"found": audit.screen.summary["found"], "accuracy": audit.screen.summary.get("accuracy")}
