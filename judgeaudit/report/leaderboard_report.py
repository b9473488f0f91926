"""The leaderboard report: raw against length-controlled rates, rank shifts, Bradley-Terry
CIs, gamed entries, the judge's position bias, and how close each figure comes to what the
leaderboard published."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.position_one_order import POOLED  # noqa: E402
from judgeaudit.report.format import STYLE, judge_table  # noqa: E402
from judgeaudit.report.plots import save  # noqa: E402
from judgeaudit.report.self_preference_report import self_preference_section  # noqa: E402
from judgeaudit.tables import write_json  # noqa: E402


def raw_vs_controlled_data(board: pd.DataFrame) -> pd.DataFrame:
    """Per model: raw, length- and style-controlled win rates (%) and whether it was flagged
    as gamed: what ``plot_raw_vs_controlled`` draws, and the data of dvc.yaml's plot."""
    return board[["model", "win_rate", "lc_win_rate", "sc_win_rate", "flagged"]].reset_index(drop=True)


def plot_raw_vs_controlled(board: pd.DataFrame, path: Path) -> Path:
    board = raw_vs_controlled_data(board)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, col, title in ((axes[0], "lc_win_rate", "length-controlled"), (axes[1], "sc_win_rate", "style-controlled")):
        colours = np.where(board.flagged, "crimson", "steelblue")
        ax.scatter(board.win_rate, board[col], c=colours, s=18)
        ax.plot([0, 100], [0, 100], color="grey", lw=0.6, ls=":")
        for r in board.itertuples():
            if r.flagged or abs(getattr(r, col) - r.win_rate) > 8 or r.model.endswith(("_verbose", "_concise")):
                ax.annotate(r.model, (r.win_rate, getattr(r, col)), fontsize=6)
        ax.set_xlabel("raw win rate (%)")
        ax.set_ylabel(f"{title} win rate (%)")
        ax.set_title(f"raw against {title} (red: flagged as gamed)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def plot_bt(board: pd.DataFrame, path: Path) -> Path:
    b = board.sort_values("bt_score")
    fig, ax = plt.subplots(figsize=(8, max(4, 0.18 * len(b))))
    y = np.arange(len(b))
    ax.errorbar(b.bt_score, y, xerr=[b.bt_score - b.bt_ci_low, b.bt_ci_high - b.bt_score], fmt="o", ms=3,
                color="steelblue", ecolor="grey", capsize=2)
    ax.set_yticks(y, b.model, fontsize=6)
    ax.axvline(1000, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("Bradley-Terry score against the baseline (Elo scale, 95% CI)")
    fig.tight_layout()
    return save(fig, path)


def plot_rank_shifts(ranks: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, max(4, 0.16 * len(ranks))))
    cols = ["rank_win_rate", "rank_lc_win_rate", "rank_sc_win_rate"]
    for r in ranks.itertuples():
        ys = [getattr(r, c) for c in cols]
        ax.plot([0, 1, 2], ys, color="crimson" if max(ys) - min(ys) >= 5 else "lightsteelblue", lw=0.8)
        ax.text(2.05, ys[-1], r.model, fontsize=5, va="center")
    ax.set_xticks([0, 1, 2], ["raw", "LC", "SC"])
    ax.invert_yaxis()
    ax.set_ylabel("rank (1 = best); red: moved 5 or more places")
    fig.tight_layout()
    return save(fig, path)


def plot_position(position: pd.DataFrame, path: Path) -> Path:
    """Each model's win rate on the instructions where it was shown first and where second,
    and the difference with its 95% CI (the pooled row on top)."""
    models = position[position.model != POOLED].sort_values("difference", ascending=False)
    rows = pd.concat([models, position[position.model == POOLED]])
    y = np.arange(len(rows))
    fig, axes = plt.subplots(1, 2, figsize=(12, max(4, 0.17 * len(rows))), sharey=True)
    axes[0].hlines(y, rows.win_rate_first, rows.win_rate_second, color="lightgrey")
    axes[0].scatter(rows.win_rate_first, y, color="crimson", s=14, label="model shown first")
    axes[0].scatter(rows.win_rate_second, y, color="steelblue", s=14, label="model shown second")
    axes[0].set_yticks(y, rows.model, fontsize=6)
    axes[0].set_xlabel("win rate against the baseline (%)")
    axes[0].legend(fontsize=7)
    pooled = (rows.model == POOLED).to_numpy()
    axes[1].errorbar(rows.difference, y, xerr=[rows.difference - rows.ci_low, rows.ci_high - rows.difference],
                     fmt="none", ecolor="grey", capsize=2)
    axes[1].scatter(rows.difference, y, c=np.where(pooled, "black", "crimson"), s=16, zorder=3)
    axes[1].axvline(0, color="grey", lw=0.6, ls=":")
    axes[1].set_xlabel("shown first - shown second (points, 95% CI over instructions)")
    fig.suptitle(f"position: {', '.join(sorted(rows.judge.unique()))}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def position_html(summary: dict, image: str | None) -> str:
    """The judge's position bias in words (and its plot), from the leaderboard's summary."""
    position = summary.get("position") or {}
    check = position.get("order_check", {})
    said = (f"the order each pair was shown in is the leaderboard's own seeded draw; the judge's log-probs "
            f"confirm it on {check.get('order_agrees', 0)} annotations and contradict it on "
            f"{check.get('order_contradicted', 0)} ({check.get('order_unchecked', 0)} keep none)") if check else ""
    if "skipped" in position or not position.get("judges"):
        return (f"<h2>Position bias</h2><p>Not measured: {html.escape(position.get('skipped', 'no order'))}"
                f"{'; ' + said if said else ''}.</p>") if position else ""
    parts = []
    for judge, j in position["judges"].items():
        fw, d = j["first_wins"], j["difference"]
        parts.append(
            f"<p><b>{html.escape(judge)}</b>: the output shown first wins with probability {fw['estimate']:.3f} "
            f"[{fw['ci_low']:.3f}, {fw['ci_high']:.3f}] (0.5: no position bias; n = {fw['n']} instructions, "
            f"{j['annotations']} annotations). A model's win rate is {d['difference']:+.1f} points "
            f"[{d['ci_low']:+.1f}, {d['ci_high']:+.1f}] when it is shown first rather than second "
            f"(randomization p = {d['p_randomization']:.2g} over {d['draws']} redraws); "
            f"{j['models_better_second']} of {j['models']} models win significantly more when shown second, "
            f"{j['models_better_first']} when shown first.</p>")
    return ("<h2>Position bias</h2><p>Each instruction was shown in one order, drawn at random; the instructions "
            f"a model was shown first on and those it was shown second on are two random halves: {said}.</p>"
            + "".join(parts) + (f"<img src='{image}' alt='position bias'>" if image else ""))


def write_leaderboard_report(result, out: Path) -> Path:
    board, summary = result.board, result.summary
    pngs = [plot_raw_vs_controlled(board, out / "raw_vs_controlled.png"), plot_bt(board, out / "bt_scores.png"),
            plot_rank_shifts(result.ranks, out / "rank_shifts.png")]
    position_png = plot_position(result.position, out / "position.png") if len(result.position) else None
    flagged = result.flags[result.flags.flagged]
    pub = pd.DataFrame([{"figure": k, **v} for k, v in summary.get("published", {}).items()])
    table = board[["model", "n", "win_rate", "win_rate_se", "lc_win_rate", "lc_se", "sc_win_rate", "bt_score",
                   "bt_ci_low", "bt_ci_high", "flagged"]].sort_values("lc_win_rate", ascending=False)
    body = [f"<!doctype html><html><head><meta charset='utf-8'><title>judgeaudit: leaderboard</title>"
            f"<style>{STYLE}</style></head><body><h1>Leaderboard audit</h1>",
            f"<p>{summary['models']} models against baseline {', '.join(summary['baseline'])}, judged by "
            f"{', '.join(summary['judge'])}. Separability (share of model pairs whose Bradley-Terry 95% CIs do "
            f"not overlap): {summary['separability_bt']:.1%}.</p>",
            "<h2>Gamed entries</h2>",
            "<p>Flagged: outputs barely depend on the instruction (median similarity of a model's outputs to two "
            "different instructions).</p>" + (judge_table(flagged.drop(columns=["flagged"])) if len(flagged) else
                                              "<p>None.</p>"),
            "<h2>Against the leaderboard's own figures</h2>", judge_table(pub) if len(pub) else "<p>No published figures.</p>",
            "".join(f"<img src='{p.name}' alt='{html.escape(p.stem)}'>" for p in pngs),
            "<h2>Length-gamed variants: spread of each base model's variants (points, 95% CI)</h2>",
            judge_table(result.gameability), position_html(summary, position_png.name if position_png else None),
            "<h2>All models</h2>", judge_table(table),
            self_preference_section(summary, out), "</body></html>"]
    path = out / "leaderboard.html"
    path.write_text("\n".join(body))
    return path


def leaderboard_section(board: pd.DataFrame, summary: dict, out_dir: Path, stage_dir: Path | None = None) -> str:
    """The leaderboard's section in the main report (with the judges' self-preference when
    the stage under ``stage_dir`` computed it)."""
    judges = self_preference_section(summary, stage_dir, out_dir) if stage_dir is not None else ""
    if board is None or board.empty:
        notes = summary.get("notes", [])
        return (("<h2>Leaderboard</h2>" + "".join(f"<p>{html.escape(n)}</p>" for n in notes)) if notes else "") + judges
    png = plot_raw_vs_controlled(board, out_dir / "leaderboard_raw_vs_controlled.png")
    write_json(raw_vs_controlled_data(board).to_dict("records"), out_dir / "plots" / "raw_vs_controlled.json")
    position_file = Path(stage_dir or out_dir) / "position.parquet"
    position = pd.read_parquet(position_file) if stage_dir is not None and position_file.exists() else None
    position_png = (plot_position(position, out_dir / "leaderboard_position.png").name
                    if position is not None and len(position) else None)
    pub = pd.DataFrame([{"figure": k, **v} for k, v in summary.get("published", {}).items()])
    top = board.sort_values("lc_win_rate", ascending=False)[
        ["model", "win_rate", "win_rate_se", "lc_win_rate", "sc_win_rate", "bt_score", "bt_ci_low", "bt_ci_high",
         "flagged"]]
    return (f"<h2>Leaderboard: {', '.join(summary['judge'])} against {', '.join(summary['baseline'])}</h2>"
            f"<p>{summary['models']} models; flagged as gamed (outputs that do not depend on the instruction): "
            f"{html.escape(', '.join(summary['flagged']) or 'none')}. Separability of Bradley-Terry 95% CIs: "
            f"{summary['separability_bt']:.1%}.</p><p>Against the leaderboard's own published figures:</p>"
            + (judge_table(pub) if len(pub) else "") + f"<img src='{png.name}' alt='raw against controlled'>" + judge_table(top)
            + position_html(summary, position_png) + judges)
