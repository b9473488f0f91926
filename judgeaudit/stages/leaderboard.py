"""Stage ``leaderboard``: a real leaderboard's win rates from its judge's annotations: raw,
length- and style-controlled, Bradley-Terry CIs, separability, gamed entries, and the
judges' self-preference where their boards are configured. Runs in the stage's process,
its steps counted on the stage's bar.

The same computations serve ``judgeaudit leaderboard``: rank shifts, the spread of
length-gamed variants, gamed entries flagged with their evidence, and the judge's position bias
from the order each pair was shown in."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgeaudit.audits.gamed_outputs import gamed_outputs
from judgeaudit.audits.leaderboard_stats import bootstrap_rates, gameability, rank_shifts, separability
from judgeaudit.audits.position_one_order import COLUMNS as POSITION_COLUMNS, position_one_order
from judgeaudit.audits.reproduction import alpacaeval_figures, published_summary
from judgeaudit.audits.self_preference import (SelfPreferenceSettings, bound_check, judge_table,
                                               published_check, self_preference)
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.audits.win_rates import (LCSettings, controlled_win_rates, gamed_stand_in,
                                         instruction_difficulty, preferences, raw_win_rates)
from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.progress import Steps, done, plan
from judgeaudit.sources.judgment_table import ReadReport
from judgeaudit.stagekit.declare import Stage
from judgeaudit.stagekit.pool import Pool
from judgeaudit.workers import spawned_pool

STAGE = Stage(
    name="leaderboard",
    # it reads scale.processes too (handed to every stage, tracked by none): the processes of
    # the gamed-output evidence and the GLMs' fits, the same figures for any number
    params=("seed", "audit.confidence", "leaderboard"),
    outs=("leaderboard",),
    section="leaderboard",
    plots=(("leaderboard/self_preference.png", {}), ("leaderboard/raw_vs_controlled.png", {})),
)


COLUMNS = ["model", "baseline", "judge", "n", "win_rate", "win_rate_se", "lc_win_rate", "lc_se", "sc_win_rate",
           "bt_score", "bt_ci_low", "bt_ci_high", "flagged"]


@dataclass(frozen=True)
class LeaderboardSettings:
    bootstrap: BootstrapSettings = BootstrapSettings()
    lc: LCSettings = LCSettings()
    flag_threshold: float = 0.5  # median cross-instruction similarity above which an entry is gamed
    workers: int = 1  # processes for the gamed-output evidence and the GLMs' liblinear fits (same figures)


@dataclass
class Leaderboard:
    board: pd.DataFrame  # one row per model: COLUMNS and more
    ranks: pd.DataFrame
    gameability: pd.DataFrame
    flags: pd.DataFrame
    difficulty: pd.Series
    published: pd.DataFrame  # the leaderboard's own figures beside ours, where known
    summary: dict = field(default_factory=dict)
    position: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=POSITION_COLUMNS))


def read_notes(report: ReadReport) -> list[str]:
    """The reader's rejections, a line per file that had any (rows read, each reason
    counted), then its notes: what the user is told alongside the figures."""
    lines = [f"{f.path}: {f.rows_read} rows read, skipped: "
             + ", ".join(f"{n} {reason}" for reason, n in sorted(f.rejected.items()))
             for f in report.files if f.rejected]
    return lines + list(report.notes)


# a reader's order checks (ReadReport.checks) past which the orders are not the judge's
ORDER_CONTRADICTED_MAX = 0.005


def judge_position(table: pd.DataFrame, boot: BootstrapSettings, order_check: Mapping[str, int] | None
                   ) -> tuple[pd.DataFrame, dict]:
    """The judge's position bias from the one order each pair was shown in
    (``position_one_order``), unless the reader's checks contradict that order."""
    check = {k: int(v) for k, v in (order_check or {}).items() if k.startswith("order_")}
    checked = check.get("order_agrees", 0) + check.get("order_contradicted", 0)
    if checked and check.get("order_contradicted", 0) > ORDER_CONTRADICTED_MAX * checked:
        return pd.DataFrame(columns=POSITION_COLUMNS), {
            "order_check": check, "skipped": "the judge's log-probs contradict the order inferred for "
            f"{check['order_contradicted']} of {checked} annotations (not AlpacaEval's default seed?)"}
    frame, pooled = position_one_order(table, boot)
    if frame.empty:
        return frame, {"order_check": check, "skipped": "every pair was shown in the same order"}
    return frame, {"order_check": check, "judges": pooled}


def build_leaderboard(table: pd.DataFrame, settings: LeaderboardSettings, steps: Steps | None = None,
                      order_check: Mapping[str, int] | None = None) -> Leaderboard:
    """Every figure of the leaderboard from its judgment table (source alpacaeval); ``steps``:
    the gamed-output evidence, each model's two GLMs, the bootstrap and the gameability;
    ``order_check``: the reader's checks of the order each pair was shown in."""
    prefs = preferences(table)
    raw = raw_win_rates(prefs)
    outputs = table.drop_duplicates(["model_2", "prompt"]).rename(columns={"model_2": "model", "response_2": "output"})
    # worker processes, starting while the TF-IDF is fitted: the models' gamed-output evidence
    # and the GLMs' liblinear fits are shared among them
    with spawned_pool(settings.workers, warm="judgeaudit.audits.liblinear_cv") as pool:
        flags = gamed_outputs(outputs[["model", "prompt", "output"]], threshold=settings.flag_threshold,
                              seed=settings.bootstrap.seed, pool=pool, steps=steps)
        # the instruction difficulty is estimated from the real entries: a gamed one answers no instruction
        difficulty = instruction_difficulty(prefs, exclude=set(flags.loc[flags.flagged, "model"]))
        gamed, stand_in = gamed_stand_in(prefs)  # AlpacaEval's gamed baselines are not public: see win_rates
        lc, lc_pred = controlled_win_rates(prefs, difficulty, "lc", settings.lc, gamed=gamed, pool=pool,
                                           steps=steps)
        sc, sc_pred = controlled_win_rates(prefs, difficulty, "sc", settings.lc, pool=pool, steps=steps)
    plan(steps, 2)
    bt = bootstrap_rates(prefs.rename(columns={"model_2": "model"}), "q", settings.bootstrap)
    done(steps)
    board = (raw.merge(lc, on=["judge", "baseline", "model"]).merge(sc, on=["judge", "baseline", "model"])
             .merge(bt.drop(columns=["rate"]).rename(columns={"ci_low": "win_rate_ci_low",
                                                              "ci_high": "win_rate_ci_high"}), on="model")
             .merge(flags[["model", "flagged"]], on="model"))
    board = board[COLUMNS + [c for c in board.columns if c not in COLUMNS]]
    ranks = rank_shifts(board)
    values = (prefs.rename(columns={"model_2": "model"})[["model", "prompt", "q"]]
              .merge(lc_pred.rename(columns={"pred": "lc"}), on=["model", "prompt"])
              .merge(sc_pred.rename(columns={"pred": "sc"}), on=["model", "prompt"]))
    # the controlled rates' spread takes each GLM's predictions as fixed: the CI is over instructions only
    games = gameability(values, {"raw": "q", "lc": "lc", "sc": "sc"}, settings.bootstrap)
    done(steps)
    published = alpacaeval_figures(board)
    position, position_summary = judge_position(table, settings.bootstrap, order_check)
    summary = {"models": int(len(board)), "baseline": sorted(board["baseline"].unique().tolist()),
               "judge": sorted(board["judge"].unique().tolist()), "separability_bt": separability(board),
               "flagged": board.loc[board.flagged, "model"].tolist(),
               "lc_gamed_stand_in": (f"{stand_in}_verbose and {stand_in}_concise against {stand_in}"
                                     if stand_in else "none: no model has both length variants; LC unregularised"),
               "published": published_summary(published), "position": position_summary}
    return Leaderboard(board, ranks, games, flags, difficulty, published, summary, position)


def write_leaderboard(result: Leaderboard, out: Path, quarantine: Path | None = None) -> dict[str, Path]:
    """Validate the win rates (Great Expectations), then write the tables (Parquet),
    summary.json and leaderboard.html with its plots."""
    from judgeaudit.report.leaderboard_report import write_leaderboard_report
    from judgeaudit.schemas.validate import validate_table
    from judgeaudit.tables import write_json, write_table

    out.mkdir(parents=True, exist_ok=True)
    validate_table(result.board, "leaderboard_win_rates", str(out / "win_rates.parquet"),
                   quarantine_dir=quarantine or out / "quarantine")
    if len(result.position):
        validate_table(result.position, "leaderboard_position", str(out / "position.parquet"),
                       quarantine_dir=quarantine or out / "quarantine")
    paths = {name: write_table(frame, out / f"{name}.parquet") for name, frame in (
        ("win_rates", result.board), ("ranks", result.ranks), ("gameability", result.gameability),
        ("flags", result.flags), ("published", result.published), ("position", result.position),
        ("difficulty", result.difficulty.rename("difficulty").rename_axis("instruction").reset_index()))}
    paths["summary"] = write_json(result.summary, out / "summary.json")
    paths["html"] = write_leaderboard_report(result, out)
    return paths


def judges_compared(section, settings: SelfPreferenceSettings, measured: pd.DataFrame | None,
                    out: Path) -> dict:
    """Self-preference of the judges whose published boards of the same models are at
    ``section.path``: tables, plot and summary under ``out``; ``measured``, a board with
    per-item standard errors (this stage's), checks the uncertainty bound and the published rows."""
    from judgeaudit.report.self_preference_report import plot_self_preference
    from judgeaudit.sources.alpacaeval_boards import read_leaderboard_csv
    from judgeaudit.tables import write_table

    root = Path(section.path)
    if not root.is_dir():
        return {"notes": [f"self-preference: skipped, {root} is absent (see the README for the data)"]}
    boards = {b.judge: read_leaderboard_csv(root / name) for name, b in section.boards.items()}
    own = {b.judge: b.own for b in section.boards.values()}
    table, baseline = judge_table(boards, own, section.families, section.n_instructions)
    gaps, ranks = self_preference(table, baseline, settings)
    write_table(table, out / "judge_boards.parquet")
    write_table(gaps, out / "self_preference.parquet")
    write_table(ranks, out / "judge_ranks.parquet")
    plot_self_preference(table, gaps, baseline, out / "self_preference.png")
    summary = {"baseline": baseline, "judges": own, "n_boot": settings.bootstrap.n_boot,
               "n_implied": table.groupby("judge").n_implied.all().to_dict(),
               "n_by_judge": {j: {"min": int(g.n.min()), "max": int(g.n.max())} for j, g in table.groupby("judge")},
               "self": gaps[gaps.relation == "self"].round(4).to_dict("records"),
               "max_self_rank_shift": float(gaps.loc[gaps.relation == "self", "rank_shift"].abs().max())}
    if measured is not None:
        judge = next((b.judge for b in section.boards.values()
                      if b.own in set(measured.baseline)), None)  # the judge whose own model is the baseline
        summary["bound_check"] = bound_check(measured, section.n_instructions)
        if judge is not None:
            check = published_check(table, judge, measured)
            summary["published_check"] = {"judge": judge, **check.round(6).to_dict("list")}
    return summary


def leaderboard_stage(params, out: Path, steps: Steps | None = None) -> dict:
    """The stage: the configured leaderboard, or a note where its annotations are absent;
    then the judges' self-preference where their boards are configured. ``steps``: reading,
    ``build_leaderboard``'s, the self-preference and writing."""
    from judgeaudit.sources import read_source
    from judgeaudit.tables import write_json

    section = params.leaderboard
    boot = BootstrapSettings(section.n_boot, params.audit.confidence, params.seed)
    out.mkdir(parents=True, exist_ok=True)
    result = None
    plan(steps, 3)  # reading, the self-preference, writing
    if Path(section.path).exists():
        table, report = read_source(section.source, section.path)
        done(steps)
        result = build_leaderboard(table, LeaderboardSettings(boot, LCSettings(cv=section.lc_cv),
                                                              flag_threshold=section.flag_threshold,
                                                              workers=params.scale.processes), steps,
                                   order_check=report.checks)
        summary = result.summary
        summary["notes"] = read_notes(report)
    else:
        summary = {"notes": [f"{section.source}: skipped, {section.path} is absent (see the README for the data)"]}
        done(steps)
    if section.self_preference is not None:
        sp = section.self_preference
        settings = SelfPreferenceSettings(sp.n_instructions,
                                          BootstrapSettings(sp.n_boot, params.audit.confidence, params.seed))
        compared = judges_compared(sp, settings, result.board if result else None, out)
        summary["notes"] = summary["notes"] + compared.pop("notes", [])
        if compared:
            summary["self_preference"] = compared
    done(steps)
    if result is not None:
        write_leaderboard(result, out, out.parent / "quarantine")
    else:
        write_json(summary, out / "summary.json")
    done(steps)
    return summary


log = logging.getLogger(__name__)


def run(params: Params, layout: Layout, tables: dict[str, pd.DataFrame], pool: Pool) -> dict:
    out = layout.root / "leaderboard"
    out.mkdir(parents=True, exist_ok=True)
    # its input is a folder outside the project: DVC decides reruns from the params naming it
    summary = leaderboard_stage(params, out, steps=pool.bar)
    for note in summary.get("notes", []):
        log.warning(note)
    return {"flagged": summary.get("flagged", []), "separability_bt": summary.get("separability_bt")}
