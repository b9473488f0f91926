"""The judge leaderboard: what a person reads first about each judge (accuracy, positional
agreement, significant biases, a plain verdict), then plots and the tables behind them."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

STYLE = ("body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222} "
         "table.t{border-collapse:collapse;font-size:12px} table.t td,table.t th{padding:3px 7px;"
         "border-bottom:1px solid #ddd;text-align:left} .ok{color:#17662a;font-weight:bold} "
         ".care{color:#8a5a00;font-weight:bold} .bad{color:#a11;font-weight:bold} img{max-width:100%}")


MARKERS = "osD^vPX<>"


def _cells(frame: pd.DataFrame, with_n: bool = False) -> list[str]:
    """Per row of ``frame`` (estimate, ci_low, ci_high, n): "estimate [low, high]", with " (n=...)"
    if asked; "" where there is no estimate."""
    return ["" if np.isnan(e) else f"{e:.3f} [{lo:.3f}, {hi:.3f}]" + (f" (n={n})" if with_n else "")
            for e, lo, hi, n in zip(frame.estimate, frame.ci_low, frame.ci_high, frame.n)]


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, float_format=lambda x: f"{x:.3f}", border=0, classes="t", na_rep="")


def _ci(est: float, lo: float, hi: float, pct: bool = True, missing: str = "n/a") -> str:
    if est is None or np.isnan(est):
        return missing
    f = (lambda v: f"{v:.1%}") if pct else (lambda v: f"{v:+.3f}")
    return f"{f(est)} [{f(lo)}, {f(hi)}]"


def first_screen(headline: pd.DataFrame) -> str:
    """The one screen a person reads first: per judge and source, a row in plain words."""
    if headline.empty:
        return "<p>No recorded verdicts of real judges were audited (no source present).</p>"
    rows = []
    for r in headline.sort_values(["source", "accuracy"], ascending=[True, False]).itertuples():
        cls = ("ok" if r.verdict.startswith("reliable") else "bad" if r.verdict.startswith("not")
               else "care")
        agree = _ci(r.positional_agreement, r.positional_agreement_ci_low, r.positional_agreement_ci_high,
                    missing="one order only")
        rows.append(f"<tr><td>{html.escape(r.judge)}</td><td>{r.source}</td><td>{html.escape(r.best_strategy)}"
                    f" <small>(best of {r.strategies})</small></td>"
                    f"<td>{_ci(r.accuracy, r.accuracy_ci_low, r.accuracy_ci_high)} <small>n={r.n}</small></td>"
                    f"<td>{agree}</td><td>{html.escape(r.significant_biases)}</td>"
                    f"<td class='{cls}'>{html.escape(r.verdict)}</td>"
                    f"<td>{html.escape(getattr(r, 'benchmark_figure', '') or '-')}</td></tr>")
    return ("<table class='t'><tr><th>judge</th><th>benchmark</th><th>strategy</th><th>accuracy [95% CI]</th>"
            "<th>positional agreement</th><th>significant biases (CI excludes no effect)</th><th>verdict</th>"
            "<th>the benchmark's own figure, ours (published)</th></tr>"
            + "".join(rows) + "</table><p><small>Accuracy against the benchmark's gold or human-majority label, "
            "averaged over both presentation orders where the judge saw both; positional agreement: the same "
            "winner in both orders. Position bias: share of verdicts for the response shown first minus 1/2. "
            "Length: share of verdicts for the longer response, against the label's own share. The benchmark's "
            "own figure is its headline metric for the same strategy: JudgeBench's score counts a pair only when "
            "more of its two orders pick the right response than the wrong one, so an inconsistent judge scores "
            "below its per-order accuracy; LLMBar reports Natural and the unweighted mean of its four "
            "adversarial subsets, not a pooled figure.</small></p>")


def plot_accuracy_agreement(card: pd.DataFrame, path: Path) -> Path | None:
    """Accuracy against positional agreement, one point per (judge, strategy) with both 95% CIs
    as whiskers, a panel per source. Each judge has its own hollow marker, so judges on the same
    spot (reward models with equal accuracy, all agreeing with themselves) all show, and the
    legend sits below the panel, where it hides no point."""
    pooled = card[card.metric.isin(["accuracy", "positional_agreement"]) & (card.judge != "label")]
    pooled = pooled[(pooled.subset == "all") | ~pooled.source.isin(pooled.loc[pooled.subset == "all", "source"])]
    wide = pooled.pivot_table(index=["source", "judge", "strategy"], columns="metric",
                              values=["estimate", "ci_low", "ci_high"])
    if ("estimate", "positional_agreement") not in wide:
        return None
    wide = wide.dropna(subset=[("estimate", "accuracy"), ("estimate", "positional_agreement")])
    sources = sorted(wide.index.unique("source"))
    fig, axes = plt.subplots(1, len(sources), figsize=(6 * len(sources), 5.6), squeeze=False)
    for ax, source in zip(axes[0], sources):
        for k, (judge, g) in enumerate(wide.xs(source, level="source").groupby(level="judge")):
            x, y = g[("estimate", "positional_agreement")], g[("estimate", "accuracy")]
            xerr = [x - g[("ci_low", "positional_agreement")], g[("ci_high", "positional_agreement")] - x]
            yerr = [y - g[("ci_low", "accuracy")], g[("ci_high", "accuracy")] - y]
            ax.errorbar(x, y, xerr=xerr, yerr=yerr,
                        fmt=MARKERS[k % len(MARKERS)], ms=6, mfc="none", mew=1.2, elinewidth=0.6, capsize=0,
                        label=judge)
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_xlabel("positional agreement (same winner in both orders)")
        ax.set_ylabel("accuracy (mean of both orders)")
        ax.set_title(f"{source}: one point per judge x strategy, 95% CIs", fontsize=10)
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(0, -0.13), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_subsets(card: pd.DataFrame, path: Path, strategy_by_source: dict[str, str] | None = None) -> Path | None:
    """Accuracy per subset, a bar per judge (for a source named in ``strategy_by_source``,
    that strategy only; otherwise every judge x strategy), with CIs."""
    acc = card[(card.metric == "accuracy") & (card.subset != "all") & (card.judge != "label")]
    multi = acc.groupby("source").subset.nunique()
    acc = acc[acc.source.isin(multi[multi > 1].index)]
    if acc.empty:
        return None
    chosen = strategy_by_source or {}
    panels = []
    for source, g in acc.groupby("source"):
        if source in chosen and (g.strategy == chosen[source]).any():
            g = g[g.strategy == chosen[source]]
        one = g.groupby("judge").strategy.nunique().max() == 1
        panels.append((source, g.assign(who=g.judge if one else g.judge + " (" + g.strategy + ")"),
                       chosen.get(source, "each judge's")))
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 4.4 * len(panels)), squeeze=False)
    for ax, (source, g, strategy) in zip(axes[:, 0], panels):
        subsets, judges = sorted(g.subset.unique()), sorted(g.who.unique())
        width = 0.8 / len(judges)
        for k, judge in enumerate(judges):
            part = g[g.who == judge].set_index("subset").reindex(subsets)
            x = np.arange(len(subsets)) + k * width
            err = np.vstack([part.estimate - part.ci_low, part.ci_high - part.estimate])
            ax.bar(x, part.estimate, width, yerr=err, capsize=2, label=judge)
        ax.set_xticks(np.arange(len(subsets)) + 0.4 - width / 2, subsets, fontsize=8)
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy")
        ax.set_title(f"{source} ({strategy} strategy): accuracy per subset, 95% CI", fontsize=10)
        ax.legend(fontsize=7, ncol=3, loc="upper left", bbox_to_anchor=(0, -0.1), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def reproduction_table(reproduction: pd.DataFrame) -> pd.DataFrame:
    """Per source: published figures recomputed, how many match, the first mismatches."""
    if reproduction.empty:
        return pd.DataFrame()
    rows = []
    for source, g in reproduction.groupby("source"):
        pub = g[g.match.notna()]
        wrong = pub[~pub.match.astype(bool)]
        rows.append({"source": source, "published figures": len(pub), "reproduced exactly": int(pub.match.sum()),
                     "mismatches": "; ".join(f"{r.judge} {r.strategy} {r.figure}: published {r.published:g}, "
                                             f"ours {r.ours:g}" for r in wrong.head(4).itertuples()) or "none",
                     "computed without a published value": int(g.match.isna().sum())})
    return pd.DataFrame(rows)


GRID = ("accuracy", "positional_agreement", "position_bias", "kappa_label", "longer_chosen")


def card_grid(card: pd.DataFrame) -> pd.DataFrame:
    """The pooled report card, a row per (source, judge, strategy): each metric of ``GRID`` as
    "estimate [low, high]", and the number of pairs the accuracy rests on."""
    pooled = card[(card.subset == "all") | ~card.source.isin(card.loc[card.subset == "all", "source"])]
    pooled = pooled[pooled.metric.isin(GRID)]
    cell = pooled.assign(cell=_cells(pooled))
    keys = ["source", "judge", "strategy"]
    grid = cell.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    grid = grid.reindex(columns=[m for m in GRID if m in grid.columns]).fillna("")
    n = pooled[pooled.metric == "accuracy"].groupby(keys)["n"].first().rename("n")
    grid = grid.join(n).reset_index()
    grid.columns.name = None
    return grid.astype({"n": "Int64"})


def leaderboard_section(card: pd.DataFrame, reproduction: pd.DataFrame, pu: pd.DataFrame,
                        headline: pd.DataFrame, notes: list[str], out_dir: Path) -> str:
    """The judge leaderboard's HTML (plots written into ``out_dir``)."""
    parts = ["<h2>Read this first: the judges</h2>", first_screen(headline)]
    if notes:
        parts.append("<p><b>Notes:</b></p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if not card.empty:
        scatter = plot_accuracy_agreement(card, out_dir / "judges_accuracy_agreement.png")
        bars = plot_subsets(card, out_dir / "judges_subsets.png", {"llmbar": "Vanilla"})
        for png, alt in ((scatter, "accuracy against positional agreement"), (bars, "accuracy per subset")):
            if png is not None:
                parts.append(f"<img src='{png.name}' alt='{alt}'>")
    if not reproduction.empty:
        parts += ["<h2>The benchmarks' own published figures, recomputed</h2>", _fmt(reproduction_table(reproduction))]
    if not pu.empty:
        overall = pu[pu.qtype == "all"][["source", "judge", "strategy", "n_pairs", "cons_orig", "cons_adj",
                                         "flip_rate", "check_n", "check_gain", "check_gain_ci_low",
                                         "check_gain_ci_high", "recommendation"]]
        overall = overall.astype({"n_pairs": "Int64", "check_n": "Int64"})
        parts += ["<h2>PU audit (partial optimal transport) with its self-check</h2>",
                  "<p>cons_orig / cons_adj: agreement with the labels the audit did not see, before and after "
                  "flipping the verdicts little verified mass reaches. check_gain: the same gain measured on "
                  "held-out verified pairs only (what a user can measure), with its 95% CI; the recommendation "
                  "follows from it.</p>", _fmt(overall)]
    if not card.empty:
        title = "Report card (pooled over subsets): estimate [95% CI], n pairs; per subset in judge_quality.parquet"
        parts += [f"<h2>{title}</h2>", _fmt(card_grid(card))]
    return "\n".join(parts)


def plot_attacks(attacks: pd.DataFrame, path: Path) -> Path:
    """Flip and fooled rates per attack, a bar per judge x strategy, with 95% CIs."""
    pooled = attacks[attacks.subset == "all"].assign(who=lambda f: f.judge + " (" + f.strategy + ")")
    metrics = [m for m in ("flip_rate", "fooled_rate") if (pooled.metric == m).any()]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.8), squeeze=False)
    names, judges = list(dict.fromkeys(pooled.attack)), sorted(pooled.who.unique())
    width = 0.8 / len(judges)
    for ax, metric in zip(axes[0], metrics):
        for k, who in enumerate(judges):
            part = pooled[(pooled.metric == metric) & (pooled.who == who)].set_index("attack").reindex(names)
            ax.bar(np.arange(len(names)) + k * width, part.estimate, width, label=who,
                   yerr=np.vstack([part.estimate - part.ci_low, part.ci_high - part.estimate]), capsize=2)
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title({"flip_rate": "attacked loser now wins (all decided pairs)",
                      "fooled_rate": "right verdicts turned wrong (labelled pairs)"}[metric], fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def attacks_section(attacks: pd.DataFrame, out_dir: Path) -> str:
    """The live judge under presentation attacks: rates with CIs, and their plot."""
    if attacks.empty:
        return ""
    table = attacks.assign(value=_cells(attacks, with_n=True)).pivot_table(index=["judge", "strategy", "attack", "subset"], columns="metric", values="value",
                              aggfunc="first", sort=False).reset_index()
    table.columns.name = None
    png = plot_attacks(attacks, out_dir / "judges_attacks.png")
    return ("<h2>Presentation attacks on the live judge</h2><p>Each attack rewrites the response the judge made "
            "lose on a pair it decided (its verdict over both orders); the pair is judged again in both orders. "
            "flip_rate: the attacked response now wins; fooled_rate: the same over labelled pairs the judge had "
            "right, where the attacked response is the wrong one. Per pair in attack_pairs.parquet.</p>"
            + _fmt(table) + f"<img src='{png.name}' alt='flip and fooled rates per attack'>")


def write_judge_report(card: pd.DataFrame, reproduction: pd.DataFrame, pu: pd.DataFrame, headline: pd.DataFrame,
                       notes: list[str], out_dir: Path, attacks: pd.DataFrame | None = None) -> Path:
    """A standalone report.html for ``judgeaudit audit-verdicts`` and ``judge-benchmark``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    body = (f"<!doctype html><html><head><meta charset='utf-8'><title>judgeaudit: judge report card</title>"
            f"<style>{STYLE}</style></head><body><h1>Judge report card</h1>"
            + leaderboard_section(card, reproduction, pu, headline, notes, out_dir)
            + attacks_section(attacks if attacks is not None else pd.DataFrame(), out_dir) + "</body></html>")
    path = out_dir / "report.html"
    path.write_text(body)
    return path
