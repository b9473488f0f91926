"""The judges' report card: the first screen a person reads (accuracy, positional agreement,
significant biases, a plain verdict per judge), its plots, the pooled card grid, and the
benchmarks' published figures recomputed."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.judge_quality import pooled  # noqa: E402
from judgeaudit.report.format import ci_cells, ci_text  # noqa: E402
from judgeaudit.report.plots import grouped_bars, save  # noqa: E402


MARKERS = "osD^vPX<>"


def first_screen(headline: pd.DataFrame) -> str:
    """The one screen a person reads first: per judge and source, a row in plain words."""
    if headline.empty:
        return "<p>No recorded verdicts of real judges were audited (no source present).</p>"
    rows = []
    for r in headline.sort_values(["source", "accuracy"], ascending=[True, False]).itertuples():
        cls = ("ok" if r.verdict.startswith("reliable") else "bad" if r.verdict.startswith("not")
               else "care")
        agree = ci_text(r.positional_agreement, r.positional_agreement_ci_low, r.positional_agreement_ci_high,
                        missing="one order only")
        rows.append(f"<tr><td>{html.escape(r.judge)}</td><td>{r.source}</td><td>{html.escape(r.best_strategy)}"
                    f" <small>(best of {r.strategies})</small></td>"
                    f"<td>{ci_text(r.accuracy, r.accuracy_ci_low, r.accuracy_ci_high)} <small>n={r.n}</small></td>"
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
    figures = pooled(card)
    figures = figures[figures.metric.isin(["accuracy", "positional_agreement"]) & (figures.judge != "label")]
    wide = figures.pivot_table(index=["source", "judge", "strategy"], columns="metric",
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
    return save(fig, path)


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
        grouped_bars(ax, g, "subset", sorted(g.subset.unique()))
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy")
        ax.set_title(f"{source} ({strategy} strategy): accuracy per subset, 95% CI", fontsize=10)
        ax.legend(fontsize=7, ncol=3, loc="upper left", bbox_to_anchor=(0, -0.1), frameon=False)
    fig.tight_layout()
    return save(fig, path)


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
    figures = pooled(card)
    figures = figures[figures.metric.isin(GRID)]
    cell = figures.assign(cell=ci_cells(figures))
    keys = ["source", "judge", "strategy"]
    grid = cell.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    grid = grid.reindex(columns=[m for m in GRID if m in grid.columns]).fillna("")
    n = figures[figures.metric == "accuracy"].groupby(keys)["n"].first().rename("n")
    grid = grid.join(n).reset_index()
    grid.columns.name = None
    return grid.astype({"n": "Int64"})
