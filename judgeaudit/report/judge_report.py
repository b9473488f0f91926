"""The judge leaderboard: what a person reads first about each judge (accuracy, positional
agreement, significant biases, a plain verdict), then plots, each pair of judges compared on
the same pairs, and the tables behind them."""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.judge_quality import ALL, pooled  # noqa: E402

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


def _saved(fig: plt.Figure, path: Path) -> Path:
    """Write a report plot and free it."""
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


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
    return _saved(fig, path)


def _grouped_bars(ax: plt.Axes, frame: pd.DataFrame, x: str, ticks: list[str]) -> None:
    """At each of ``ticks`` (values of column ``x``), a bar per ``who`` (sorted): the estimate
    with its CI."""
    series = sorted(frame.who.unique())
    width = 0.8 / len(series)
    for k, who in enumerate(series):
        part = frame[frame.who == who].set_index(x).reindex(ticks)
        ax.bar(np.arange(len(ticks)) + k * width, part.estimate, width, label=who, capsize=2,
               yerr=np.vstack([part.estimate - part.ci_low, part.ci_high - part.estimate]))
    ax.set_xticks(np.arange(len(ticks)) + 0.4 - width / 2, ticks, fontsize=8)


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
        _grouped_bars(ax, g, "subset", sorted(g.subset.unique()))
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy")
        ax.set_title(f"{source} ({strategy} strategy): accuracy per subset, 95% CI", fontsize=10)
        ax.legend(fontsize=7, ncol=3, loc="upper left", bbox_to_anchor=(0, -0.1), frameon=False)
    fig.tight_layout()
    return _saved(fig, path)


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}"


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """A row per pair of judges: who is more accurate than whom on the same pairs, by how
    many points [CI], on how many pairs, and whether the Holm-adjusted test says they differ."""
    c = comparison
    level = f"{c.confidence.iloc[0]:.0%}" if len(c) else ""
    return pd.DataFrame({
        "source": c.source, "more accurate (A)": c.judge_a + " (" + c.strategy_a + ")",
        "than (B)": c.judge_b + " (" + c.strategy_b + ")", "n pairs": c.n.astype("Int64"),
        f"difference, points [{level} CI]": [f"{_pct(d)} [{_pct(lo)}, {_pct(hi)}]"
                                             for d, lo, hi in zip(c.difference, c.ci_low, c.ci_high)],
        "pairs where A / B scores higher": [f"{a} / {b}" for a, b in zip(c.a_better, c.b_better)],
        "p (Holm)": [f"{p:.2g}" for p in c.p_holm],
        "verdict": ["A more accurate" if s else "no difference shown" for s in c.significant]})


def _points(value: float) -> str:
    return "0" if abs(value) < 0.5 else f"{value:+.0f}"


def _diff_grid(ax: plt.Axes, diff: np.ndarray, star: np.ndarray, rows: list[str], cols: list[str],
               top: float, fmt: Callable[[float], str] = _points, centre: float = 0.0) -> matplotlib.image.AxesImage:
    """Values (differences in points, by default) on a red-blue scale of ``centre`` +-``top``, each cell
    written by ``fmt``, starred where ``star``; a nan cell stays blank."""
    image = ax.imshow(diff, cmap="RdBu", vmin=centre - top, vmax=centre + top)
    for (i, j), v in np.ndenumerate(diff):
        if not np.isnan(v):
            ax.text(j, i, fmt(v) + ("*" if star[i, j] else ""), ha="center",
                    va="center", fontsize=7, color="white" if abs(v - centre) > 0.6 * top else "black")
    ax.set_xticks(range(len(cols)), cols, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    return image


def _save_grids(fig: plt.Figure, image: matplotlib.image.AxesImage, path: Path, title: str, shrink: float,
                label: str = "points") -> Path:
    """Title the grids, give them one colour bar (in ``label``), write the figure to ``path``."""
    fig.suptitle(title, fontsize=10)
    fig.colorbar(image, ax=fig.axes, shrink=shrink, label=label)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def _pair_grids(frame: pd.DataFrame, path: Path, names_of: Callable[[pd.DataFrame], list[str]],
                cells: Callable[..., tuple[float, float, bool]], top: float, title: str, label: str = "points",
                fmt: Callable[[float], str] = _points) -> Path:
    """Per source, a judge x judge grid of ``frame``'s rows (judge_a, judge_b): ``names_of(rows)``
    orders a source's judges, ``cells(row)`` gives the (a, b) cell, the (b, a) cell and whether
    both are starred; one colour scale of +-``top`` for every panel."""
    sources = sorted(frame.source.unique())
    names = [names_of(frame[frame.source == source]) for source in sources]
    sizes = [max(len(n), 3) for n in names]
    fig, axes = plt.subplots(len(sources), 1, figsize=(0.7 * max(sizes) + 5, sum(0.7 * k + 2.2 for k in sizes)),
                             squeeze=False, gridspec_kw={"height_ratios": sizes}, layout="constrained")
    for ax, source, order in zip(axes[:, 0], sources, names):
        at = {name: k for k, name in enumerate(order)}
        grid, star = np.full((len(order),) * 2, np.nan), np.zeros((len(order),) * 2, bool)
        for r in frame[frame.source == source].itertuples():
            i, j = at[r.judge_a], at[r.judge_b]
            grid[i, j], grid[j, i], star[i, j] = cells(r)
            star[j, i] = star[i, j]
        image = _diff_grid(ax, grid, star, order, order, top, fmt)
        ax.set_title(source, fontsize=10)
    return _save_grids(fig, image, path, title, shrink=0.5, label=label)


def plot_comparisons(comparison: pd.DataFrame, path: Path) -> Path | None:
    """Per source, a judge x judge grid: the row judge's accuracy minus the column judge's on the
    pairs both judged, in points, starred where the Holm-adjusted test says they differ."""
    if comparison.empty:
        return None

    def by_accuracy(g: pd.DataFrame) -> list[str]:
        accuracy = pd.concat([pd.Series(g.accuracy_a.values, g.judge_a), pd.Series(g.accuracy_b.values, g.judge_b)])
        return list(accuracy.groupby(level=0).mean().sort_values(ascending=False).index)

    alpha = 1 - comparison.confidence.iloc[0]
    return _pair_grids(comparison, path, by_accuracy, lambda r: (100 * r.difference, -100 * r.difference, r.significant),
                       max(100 * comparison.difference.max(), 1.0), "Judge against judge on the same pairs: the row "
                       f"judge's accuracy\nminus the column judge's, in points; * Holm-adjusted p < {alpha:.2g}")


def plot_error_correlation(correlation: pd.DataFrame, path: Path) -> Path:
    """Per source, a judge x judge grid of the correlation of the two judges' errors on the same
    pairs, judges from the fewest errors to the most."""
    def by_errors(g: pd.DataFrame) -> list[str]:
        errors = pd.concat([pd.Series(g.error_a.values, g.judge_a), pd.Series(g.error_b.values, g.judge_b)])
        return list(errors.groupby(level=0).mean().sort_values().index)

    return _pair_grids(correlation, path, by_errors, lambda r: (r.correlation, r.correlation, False), 1.0,
                       "Which judges err together? Correlation (phi) of two judges' errors on the same pairs",
                       label="correlation", fmt=lambda v: f"{v:.2f}")


def comparison_section(comparison: pd.DataFrame | None, out_dir: Path) -> str:
    """Judge against judge on the same pairs: the grid plot and the table behind it."""
    if comparison is None or comparison.empty:
        return ""
    png = plot_comparisons(comparison, out_dir / "judges_comparison.png")
    return ("<h2>Which judge is more accurate? Each pair of judges on the same pairs</h2><p>Each judge in its "
            "strategy of the first screen, against every other judge of the benchmark on the labelled pairs both "
            "judged. Per pair, a judge scores its accuracy over the orders it saw; the difference has a paired "
            "bootstrap CI, and the exact paired permutation test's p-value is Holm-adjusted over the benchmark's "
            "pairs of judges. Read this, not the first screen's CIs, to choose between two judges: CIs that overlap "
            "do not show two judges equal, and both judged the same pairs. Per pair of judges in "
            "judge_comparison.parquet.</p>"
            f"<img src='{png.name}' alt='judge against judge, accuracy difference'>"
            + _fmt(comparison_table(comparison)))


def plot_juries(card: pd.DataFrame, jury_card: pd.DataFrame, headline: pd.DataFrame, path: Path) -> Path:
    """Per source, each judge (its headline strategy) and each jury: accuracy and position bias
    with 95% CIs, juries in orange."""
    chosen = headline[["source", "judge", "best_strategy"]].rename(columns={"best_strategy": "strategy"})
    rows = pd.concat([pooled(card).merge(chosen), pooled(jury_card)], ignore_index=True)
    metrics = {"accuracy": "accuracy", "position_bias": "position bias (first shown wins - 1/2)"}
    sources = sorted(jury_card.source.unique())
    sizes = [rows[rows.source == s].judge.nunique() for s in sources]
    fig, axes = plt.subplots(len(sources), 2, figsize=(11, sum(0.32 * k + 1.3 for k in sizes)), squeeze=False,
                             gridspec_kw={"height_ratios": sizes}, layout="constrained")
    for row, source in zip(axes, sources):
        g = rows[rows.source == source]
        order = list(g[g.metric == "accuracy"].sort_values("estimate").judge)
        for ax, (metric, title) in zip(row, metrics.items()):
            m = g[g.metric == metric].set_index("judge").reindex(order)
            colour = ["tab:orange" if j.startswith("jury") else "tab:blue" for j in order]
            ax.barh(range(len(order)), m.estimate.fillna(0), color=colour,
                    xerr=np.vstack([m.estimate - m.ci_low, m.ci_high - m.estimate]), capsize=2)
            ax.set_yticks(range(len(order)), order, fontsize=7)
            ax.axvline(0.5 if metric == "accuracy" else 0.0, color="grey", lw=0.8, ls=":")
            ax.set_title(f"{source}: {title}", fontsize=9)
    fig.suptitle("Juries (orange, majority vote) against their judges (blue), 95% CIs", fontsize=10)
    return _saved(fig, path)


def errors_section(correlation: pd.DataFrame | None, out_dir: Path) -> str:
    """Which judges err together: the grid plot and the table behind it."""
    if correlation is None or correlation.empty:
        return ""
    png = plot_error_correlation(correlation, out_dir / "judges_error_correlation.png")
    c = correlation.sort_values(["source", "correlation"], ascending=[True, False])
    level = f"{c.confidence.iloc[0]:.0%}"
    table = pd.DataFrame({
        "source": c.source, "judge A": c.judge_a + " (" + c.strategy_a + ")",
        "judge B": c.judge_b + " (" + c.strategy_b + ")", "n pairs": c.n.astype("Int64"),
        "errors A / B": [f"{a:.3f} / {b:.3f}" for a, b in zip(c.error_a, c.error_b)],
        "both wrong (if independent)": [f"{w:.3f} ({e:.3f})" for w, e in zip(c.both_wrong, c.expected_both)],
        f"correlation [{level} CI]": [f"{r:.2f} [{lo:.2f}, {hi:.2f}]" for r, lo, hi in zip(c.correlation, c.ci_low,
                                                                                        c.ci_high)]})
    return ("<h2>Which judges err together? The correlation of their errors on the same pairs</h2><p>Per benchmark, "
            "every two judges in their strategies of the first screen, over the labelled pairs and orders both "
            "judged: how often both are wrong, against how often they would be were their errors independent, and "
            "the correlation (phi) of the two error indicators, with a CI that resamples pairs. Judges whose errors "
            "correlate fall for the same pairs: a second one checks the first little, and a jury of them votes "
            "together. Per pair of judges in error_correlation.parquet.</p>"
            f"<img src='{png.name}' alt='correlation of the judges errors'>" + _fmt(table))


def juries_section(juries: dict | None, card: pd.DataFrame, headline: pd.DataFrame, out_dir: Path) -> str:
    """Can a jury replace the best judge? ``juries``: the juries' card, their comparisons and
    the summary's records (members); the plot, the juries' card and the comparisons."""
    if not juries or juries["card"].empty:
        return ""
    png = plot_juries(card, juries["card"], headline, out_dir / "judges_juries.png")
    members = pd.DataFrame([{"source": r["source"], "judge": r["jury"], "members": ", ".join(r["members"])}
                            for r in juries["summary"]])
    table = card_grid(juries["card"]).merge(members, how="left").drop(columns=["strategy"])
    return ("<h2>Can a jury replace the best judge? Majority votes of the judges</h2><p>Per benchmark with three "
            "judges or more, each in its strategy of the first screen: a jury of all of them, and one of all but "
            "the most accurate. On a pair in one order, a jury says what most of its members' decisive verdicts "
            "say (a tie or an unparseable verdict abstains; equal votes: tie), on the pairs every member judged. "
            "Each jury is compared, on the same pairs, with the most accurate judge it leaves out and with its own "
            "most accurate member (does voting beat picking that member?), Holm-adjusted over the benchmark's jury "
            "comparisons. Voting helps where members err independently; judges that fall for the same cue, or "
            "share a position bias, vote for it together. Verdicts with their vote counts in jury_verdicts.parquet; "
            "figures in juries.parquet and jury_comparison.parquet.</p>"
            f"<img src='{png.name}' alt='juries against their judges'>" + _fmt(table)
            + _fmt(comparison_table(juries["comparison"])))


def plot_alt_test(alt: pd.DataFrame, path: Path) -> Path:
    """Per judge the alt-test ran on: its advantage probability with its CI, and per left-out
    annotator the margin mean(W_h - W_f) against the epsilon it must stay below."""
    keys = ["source", "judge", "strategy", "order"]
    judges = alt.groupby(keys, sort=True).first().reset_index()
    names = [f"{r.source}: {r.judge} ({r.strategy}, order {r.order})" for r in judges.itertuples()]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.45 * len(judges) + 2), layout="constrained")
    colour = ["tab:green" if p else "tab:red" for p in judges.passed]
    left.barh(range(len(judges)), judges.advantage_prob, color=colour, capsize=3,
              xerr=np.vstack([judges.advantage_prob - judges.ci_low, judges.ci_high - judges.advantage_prob]))
    left.set_yticks(range(len(judges)), names, fontsize=7)
    left.set_xlim(0, 1)
    left.set_title(f"advantage probability, {judges.confidence.iloc[0]:.0%} CI", fontsize=9)
    for k, r in enumerate(judges.itertuples()):
        rows = alt[(alt[keys] == pd.Series(r._asdict())[keys]).all(axis=1)]
        right.scatter(rows.margin, [k] * len(rows), color="tab:blue", s=18)
        right.scatter([r.epsilon], [k], marker="|", color="black", s=200)
    right.set_yticks(range(len(judges)), [""] * len(judges))
    right.set_ylim(left.get_ylim())
    right.set_xlim(min(0.0, alt.margin.min()) - 0.03, max(alt.margin.max(), alt.epsilon.max()) + 0.03)
    right.axvline(0, color="grey", lw=0.8, ls=":")
    right.set_title("margin per left-out annotator (dots): the judge wins well left of epsilon (bar)", fontsize=9)
    fig.suptitle("Can the judge replace a human annotator? The alt-test (green: passes, red: fails)", fontsize=10)
    return _saved(fig, path)


def alt_test_section(alt: pd.DataFrame | None, out_dir: Path) -> str:
    """The alternative annotator test: the plot, a row per judge and the annotators' rows."""
    if alt is None or alt.empty:
        return ""
    png = plot_alt_test(alt, out_dir / "judges_alt_test.png")
    judges = alt.groupby(["source", "judge", "strategy", "order"], sort=True).first().reset_index()
    level = f"{judges.confidence.iloc[0]:.0%}"
    table = pd.DataFrame({
        "source": judges.source, "judge": judges.judge + " (" + judges.strategy + ", order " + judges.order + ")",
        "annotators": judges.annotators.astype("Int64"), "epsilon": judges.epsilon,
        "winning rate": judges.winning_rate.map(lambda v: f"{v:.2f}"),
        "verdict": judges.passed.map({True: "passes: can replace an annotator", False: "fails"}),
        f"advantage probability [{level} CI]": [_ci(e, lo, hi) for e, lo, hi in
                                                zip(judges.advantage_prob, judges.ci_low, judges.ci_high)],
        "passes from epsilon": judges.epsilon_to_pass.map(lambda v: "never" if pd.isna(v) else f"{v:.2f}")})
    per = alt.assign(who=alt.judge + " (" + alt.strategy + ")")[
        ["source", "who", "annotator", "n", "judge_advantage", "annotator_advantage", "margin", "p_by", "wins"]]
    return ("<h2>Can the judge replace a human annotator? The alternative annotator test</h2><p>On the items that "
            "carry several human labels (Calderon, Reichart and Dror, 2025): one annotator is left out at a time, "
            "and on each item the judge and that annotator compete to agree with the others. The judge wins "
            "against an annotator where a one-sided t-test rejects that the annotator does better by epsilon or "
            "more (epsilon: what the judge's lower cost is worth), Benjamini-Yekutieli over the annotators; it "
            "passes where it wins against at least half of them. The advantage probability (how often the judge "
            "does at least as well as an annotator) compares judges; its CI resamples items. 'Passes from "
            "epsilon': the smallest epsilon at which the judge would pass. Per left-out annotator in "
            "alt_test.parquet.</p>"
            f"<img src='{png.name}' alt='alt-test per judge'>" + _fmt(table) + _fmt(per.round(3)))


def _with_errors(wide: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """A metric's estimates from a (estimate | ci_low | ci_high) x metric frame, and their error bars."""
    est, lo, hi = (wide[(k, metric)].to_numpy(float) for k in ("estimate", "ci_low", "ci_high"))
    return est, np.nan_to_num(np.vstack([est - lo, hi - est]))


def plot_selective(kept: pd.DataFrame, path: Path) -> Path:
    """Per source, each judge's agreement on every test pair (grey) and on the pairs it keeps (green),
    with CIs, the share it keeps beside them, and the target 1 - alpha; on the right, how well its
    confidence tells right verdicts from wrong (AUROC) and matches their share (ECE), with CIs."""
    kept = kept[kept.subset == ALL]
    wide = kept.pivot(index=["source", "judge"], columns="metric", values=["estimate", "ci_low", "ci_high"])
    sources = sorted(kept.source.unique())
    sizes = [len(wide.loc[s]) for s in sources]
    fig, axes = plt.subplots(len(sources), 2, figsize=(12, sum(0.45 * k + 1.0 for k in sizes)), squeeze=False,
                             gridspec_kw={"height_ratios": sizes, "width_ratios": [3, 2]}, layout="constrained")
    for (ax, right), source in zip(axes, sources):
        w = wide.loc[source].sort_values(("estimate", "accuracy"))
        y = np.arange(len(w))
        for offset, metric, colour in ((-0.2, "accuracy", "tab:grey"), (0.2, "selective_accuracy", "tab:green")):
            est, err = _with_errors(w, metric)
            ax.barh(y + offset, np.nan_to_num(est), height=0.4, color=colour, capsize=2, xerr=err,
                    label=metric.replace("_", " "))
        for k, cover in enumerate(w[("estimate", "coverage")]):
            ax.text(1.01, k, f"keeps {cover:.0%}" if cover > 0 else "escalates all", va="center", fontsize=7)
        ax.axvline(1 - kept.alpha.iloc[0], color="black", lw=0.8, ls="--")
        ax.set_yticks(y, list(w.index), fontsize=7)
        ax.set_xlim(0, 1.15)
        ax.set_title(f"{source}: agreement with the label, every test pair (grey), pairs kept (green); "
                     f"dashed: 1 - alpha", fontsize=8)
        for offset, metric, marker, colour in ((0.12, "auroc", "o", "tab:blue"), (-0.12, "ece", "s", "tab:orange")):
            if ("estimate", metric) in w:
                est, err = _with_errors(w, metric)
                right.errorbar(est, y + offset, xerr=err, fmt=marker, color=colour, capsize=2, ms=4,
                               label=metric.upper())
        right.axvline(0.5, color="tab:blue", lw=0.8, ls=":")
        right.set_yticks(y, [])
        right.set_xlim(0, 1)
        right.set_title("its confidence: AUROC (dotted: chance) and ECE", fontsize=8)
    handles, labels = zip(*(entry for ax in axes[0] for entry in zip(*ax.get_legend_handles_labels())))
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=8)
    return _saved(fig, path)


def plot_confidence_by_subset(kept: pd.DataFrame, path: Path) -> Path | None:
    """Per source, a judge x subset grid of the AUROC of each judge's confidence (blue: it ranks right
    verdicts above wrong ones; red: it is surer when wrong), starred where the CI excludes 0.5; None
    where no source has subset rows."""
    auroc = kept[(kept.metric == "auroc") & (kept.subset != ALL)]
    if auroc.empty:
        return None
    sources = sorted(auroc.source.unique())
    shape = auroc.groupby("source").agg(judges=("judge", "nunique"), subsets=("subset", "nunique"))
    fig, axes = plt.subplots(len(sources), 1, squeeze=False, layout="constrained",
                             figsize=(1.1 * shape.subsets.max() + 5, sum(0.45 * k + 1.8 for k in shape.judges)),
                             gridspec_kw={"height_ratios": list(shape.judges)})
    for ax, source in zip(axes[:, 0], sources):
        est, low, high = (auroc[auroc.source == source].pivot(index="judge", columns="subset", values=v)
                          for v in ("estimate", "ci_low", "ci_high"))
        star = ((low > 0.5) | (high < 0.5)).to_numpy()
        image = _diff_grid(ax, est.to_numpy(float), star, list(est.index), list(est.columns), 0.5,
                           fmt=lambda v: f"{v:.2f}", centre=0.5)
        ax.set_title(source, fontsize=10)
    return _save_grids(fig, image, path, "AUROC of each judge's confidence per subset (0.5: chance; *: its CI "
                       "excludes 0.5)", shrink=0.6, label="AUROC")


def plot_reliability(bins: pd.DataFrame, path: Path, kept: pd.DataFrame | None = None) -> Path:
    """Each judge's reliability diagram in a panel of its own (a row of panels per source): the share of
    its verdicts right against their mean confidence, per bin of confidence (a point's area: its verdicts),
    with CIs, above a bar of how many of its verdicts fall in each bin; the diagonal is a calibrated judge,
    below it an overconfident one. ``kept`` (selective.parquet) titles each panel with its ECE and CI."""
    sources = sorted(bins.source.unique())
    width = max(bins.groupby("source").judge.nunique())
    ece = {} if kept is None else {
        (r.source, r.judge): f"ECE {r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"
        for r in kept[(kept.metric == "ece") & (kept.subset == ALL)].itertuples()}
    fig, axes = plt.subplots(len(sources), width, figsize=(2.3 * width, 2.6 * len(sources)), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    for row, source in zip(axes, sources):
        mine = bins[bins.source == source]
        judges = sorted(mine.judge.unique())
        for ax, judge in zip(row, judges):
            g = mine[mine.judge == judge]
            ax.bar(g.bin_low, 0.25 * g.n / g.n.max(), width=g.bin_high - g.bin_low, align="edge",
                   color="0.85", zorder=0)  # where its verdicts lie (tallest bin: a quarter of the height)
            ax.plot([0, 1], [0, 1], color="black", lw=0.7, ls="--")
            err = np.vstack([g.share_right - g.ci_low, g.ci_high - g.share_right])
            ax.errorbar(g.mean_confidence, g.share_right, yerr=err, lw=0.9, capsize=1.5, color="tab:blue")
            ax.scatter(g.mean_confidence, g.share_right, s=6 + 60 * g.n / g.n.max(), color="tab:blue", zorder=3)
            name = textwrap.fill(judge, 26, break_on_hyphens=True)
            ax.set_title(f"{name}\n{ece.get((source, judge), f'{g.n.sum()} verdicts')}", fontsize=6.5)
            ax.tick_params(labelsize=7)
        for ax in row[len(judges):]:
            ax.set_visible(False)
        row[0].set_ylabel(f"{source}\nshare right", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("mean confidence", fontsize=8)
    axes[0, 0].set_xlim(0, 1.02)
    axes[0, 0].set_ylim(-0.02, 1.02)
    fig.suptitle("Reliability per judge (dashed: calibrated; grey bars: how its verdicts spread over the bins)",
                 fontsize=9)
    return _saved(fig, path)


def selective_section(kept: pd.DataFrame | None, out_dir: Path, bins: pd.DataFrame | None = None) -> str:
    """Trust or escalate: the plot and a row per judge; the confidence per subset and its reliability
    diagrams, where there are rows for them."""
    if kept is None or kept.empty:
        return ""
    png = plot_selective(kept, out_dir / "judges_selective.png")
    diagram = None if bins is None or bins.empty else plot_reliability(bins, out_dir / "judges_reliability.png", kept)
    by_subset = plot_confidence_by_subset(kept, out_dir / "judges_confidence_by_subset.png")
    parts = kept[(kept.metric == "auroc") & (kept.subset != ALL)]
    parts = [g.assign(cell=_cells(g, with_n=True)).pivot(index=["source", "judge"], columns="subset",
                                                         values="cell").reset_index().rename_axis(columns=None)
             for _, g in parts.groupby("source", sort=True)]  # a table per source: its own subsets
    kept = kept[kept.subset == ALL]
    cells = kept.assign(cell=_cells(kept, with_n=True))
    table = cells.pivot_table(index=["source", "judge", "strategy", "confidence", "threshold"], columns="metric",
                              values="cell", aggfunc="first").reset_index()
    table.columns.name = None
    table["threshold"] = table.threshold.map(lambda v: "escalates all" if np.isinf(v) else f"{v:.3f}")
    alpha, delta = kept.alpha.iloc[0], kept.delta.iloc[0]
    return ("<h2>Trust or escalate: the pairs each judge can be trusted with</h2><p>Selective evaluation (Jung, "
            "Brahman and Choi, 2025): each judge, in its strategy of the first screen, keeps the pairs where its "
            "confidence reaches a threshold and escalates the rest to a stronger judge or a human. The threshold "
            "is calibrated on a random half of the pairs (one order each) by fixed-sequence testing with an exact "
            f"binomial bound, so that on the pairs kept the judge agrees with the label at least {1 - alpha:.0%} "
            f"of the time with probability at least {1 - delta:.0%}. Confidence: a reward model's max(p_1, "
            "1 - p_1); otherwise the share of the judge's verdicts on the pair, over its strategies and both "
            "orders, that agree. On the other half: the share kept, the agreement on it and on every pair; "
            "target_reached: over random halvings, the share whose kept test pairs reached the target (the "
            "guarantee bounds the true rate, and a finite test half misses it by chance now and then). Over both "
            "orders of every pair (resampled by pair), how far the confidence can be trusted at all: auroc, the "
            "chance that a right verdict carries more confidence than a wrong one (0.5: it says nothing; below: "
            "the judge is surer when wrong), and "
            "ece and overconfidence, its distance from the share right (10 equal bins; mean confidence minus "
            "the share right). Rows in selective.parquet.</p>"
            f"<img src='{png.name}' alt='selective evaluation per judge'>" + _fmt(table)
            + ("" if by_subset is None else
               "<p>The same AUROC per subset of the benchmark (its rows of selective.parquet also hold ece and "
               "overconfidence): a confidence that ranks on plain pairs can run backwards on adversarial ones, "
               "where the wrong output is built to look better and a judge picks it again and again.</p>"
               f"<img src='{by_subset.name}' alt='AUROC per judge and subset'>" + "".join(map(_fmt, parts)))
            + ("" if diagram is None else
               "<p>Where ECE comes from: per bin of confidence (ten equal bins, both orders of every pair), the "
               "share of the judge's verdicts right against their mean confidence, with CIs that resample "
               "pairs (exact binomial ones where a bin's verdicts are all right or all wrong), a panel per "
               "judge titled with its ECE, over a bar of how its verdicts spread across the "
               "bins; a judge on the diagonal is calibrated, one below it overconfident, and a line that falls "
               "as confidence rises is surer when wrong. Rows in reliability.parquet.</p>"
               f"<img src='{diagram.name}' alt='reliability diagram per judge'>"))


def plot_strategies(strategies: pd.DataFrame, path: Path) -> Path:
    """Per source, a judge x strategy grid: the strategy's accuracy minus the base strategy's, in
    points, starred where the Holm-adjusted test says they differ."""
    sources = sorted(strategies.source.unique())
    width, height = 0.6 * strategies.strategy.nunique() + 4, 0.55 * strategies.judge.nunique() * len(sources) + 2.5
    fig, axes = plt.subplots(len(sources), 1, squeeze=False, layout="constrained", figsize=(width, height))
    top = max(100 * strategies.difference.abs().max(), 1.0)
    for ax, source in zip(axes[:, 0], sources):
        g = strategies[strategies.source == source]
        judges = list(g.groupby("judge").accuracy_base.first().sort_values(ascending=False).index)
        names = list(g.groupby("strategy").difference.mean().sort_values(ascending=False).index)
        diff = g.pivot(index="judge", columns="strategy", values="difference").reindex(index=judges, columns=names)
        star = g.pivot(index="judge", columns="strategy", values="significant").reindex(index=judges, columns=names)
        image = _diff_grid(ax, 100 * diff.to_numpy(float), star.fillna(False).to_numpy(bool), judges, names, top)
        ax.set_title(f"{source}: each strategy minus {g.base.iloc[0]}", fontsize=10)
    return _save_grids(fig, image, path, "Does a strategy help its judge? Accuracy points on the same pairs; "
                       f"* Holm-adjusted p < {1 - strategies.confidence.iloc[0]:.2g}", shrink=0.6)


def strategies_section(strategies: pd.DataFrame | None, out_dir: Path) -> str:
    """Each judge's strategies against its base strategy: the grid plot and the table behind it."""
    if strategies is None or strategies.empty:
        return ""
    png = plot_strategies(strategies, out_dir / "judges_strategies.png")
    s = strategies
    table = pd.DataFrame({
        "source": s.source, "judge": s.judge, "strategy": s.strategy, "against": s.base, "n pairs": s.n.astype("Int64"),
        "accuracy": [f"{a:.1%} vs {b:.1%}" for a, b in zip(s.accuracy, s.accuracy_base)],
        f"difference, points [{s.confidence.iloc[0]:.0%} CI]": [
            f"{_pct(d)} [{_pct(lo)}, {_pct(hi)}]" for d, lo, hi in zip(s.difference, s.ci_low, s.ci_high)],
        "pairs better / worse": [f"{a} / {b}" for a, b in zip(s.better, s.worse)],
        "p (Holm)": [f"{p:.2g}" for p in s.p_holm],
        "verdict": ["no difference shown" if not sig else "helps" if d > 0 else "hurts"
                    for sig, d in zip(s.significant, s.difference)]})
    return ("<h2>Does a strategy help its judge? Each strategy against the base, on the same pairs</h2><p>Per judge, "
            "each prompting strategy the benchmark recorded against its base strategy, on the labelled pairs both "
            "cover: the accuracy difference with a paired bootstrap CI and the exact paired permutation test, "
            "Holm-adjusted over the judge's strategies. Per strategy in strategy_comparison.parquet.</p>"
            f"<img src='{png.name}' alt='each strategy against the base strategy'>"
            + _fmt(table[table.verdict != "no difference shown"]) + "<p><small>Only the strategies whose difference "
            "the test shows are listed; strategy_comparison.parquet has them all.</small></p>")


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
    cell = figures.assign(cell=_cells(figures))
    keys = ["source", "judge", "strategy"]
    grid = cell.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    grid = grid.reindex(columns=[m for m in GRID if m in grid.columns]).fillna("")
    n = figures[figures.metric == "accuracy"].groupby(keys)["n"].first().rename("n")
    grid = grid.join(n).reset_index()
    grid.columns.name = None
    return grid.astype({"n": "Int64"})


def leaderboard_section(judges: dict, out_dir: Path) -> str:
    """The judge leaderboard's HTML (plots written into ``out_dir``). ``judges``: card,
    reproduction, pu, headline and notes, and where the audit made them: comparison, strategies,
    errors (``error_correlation``'s table), alt_test, juries (see ``juries_section``)."""
    card, reproduction, pu, headline = (judges[k] for k in ("card", "reproduction", "pu", "headline"))
    notes = judges["notes"]
    parts = ["<h2>Read this first: the judges</h2>", first_screen(headline)]
    if notes:
        parts.append("<p><b>Notes:</b></p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if not card.empty:
        scatter = plot_accuracy_agreement(card, out_dir / "judges_accuracy_agreement.png")
        bars = plot_subsets(card, out_dir / "judges_subsets.png", {"llmbar": "Vanilla"})
        for png, alt in ((scatter, "accuracy against positional agreement"), (bars, "accuracy per subset")):
            if png is not None:
                parts.append(f"<img src='{png.name}' alt='{alt}'>")
    parts += [comparison_section(judges.get("comparison"), out_dir),
              strategies_section(judges.get("strategies"), out_dir), errors_section(judges.get("errors"), out_dir),
              juries_section(judges.get("juries"), card, headline, out_dir),
              alt_test_section(judges.get("alt_test"), out_dir), selective_section(judges.get("selective"), out_dir, judges.get("reliability"))]
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
    for ax, metric in zip(axes[0], metrics):
        _grouped_bars(ax, pooled[pooled.metric == metric], "attack", list(dict.fromkeys(pooled.attack)))
        ax.set_ylim(0, 1.05)
        ax.set_title({"flip_rate": "attacked loser now wins (all decided pairs)",
                      "fooled_rate": "right verdicts turned wrong (labelled pairs)"}[metric], fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _saved(fig, path)


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


def write_judge_report(judges: dict, out_dir: Path, attacks: pd.DataFrame | None = None) -> Path:
    """A standalone report.html for ``judgeaudit audit-verdicts`` and ``judge-benchmark``
    (``judges``: see ``leaderboard_section``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    body = (f"<!doctype html><html><head><meta charset='utf-8'><title>judgeaudit: judge report card</title>"
            f"<style>{STYLE}</style></head><body><h1>Judge report card</h1>"
            + leaderboard_section(judges, out_dir)
            + attacks_section(attacks if attacks is not None else pd.DataFrame(), out_dir) + "</body></html>")
    path = out_dir / "report.html"
    path.write_text(body)
    return path
