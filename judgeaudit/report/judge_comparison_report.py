"""Judges compared on the same pairs: judge against judge (accuracy differences, Holm-adjusted),
which judges err together, and each judge's strategies against its base strategy."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import judge_table, points_text  # noqa: E402
from judgeaudit.report.plots import diff_grid, pair_grids, save_grids  # noqa: E402


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """A row per pair of judges: who is more accurate than whom on the same pairs, by how
    many points [CI], on how many pairs, and whether the Holm-adjusted test says they differ."""
    c = comparison
    level = f"{c.confidence.iloc[0]:.0%}" if len(c) else ""
    return pd.DataFrame({
        "source": c.source, "more accurate (A)": c.judge_a + " (" + c.strategy_a + ")",
        "than (B)": c.judge_b + " (" + c.strategy_b + ")", "n pairs": c.n.astype("Int64"),
        f"difference, points [{level} CI]": [f"{points_text(d)} [{points_text(lo)}, {points_text(hi)}]"
                                             for d, lo, hi in zip(c.difference, c.ci_low, c.ci_high)],
        "pairs where A / B scores higher": [f"{a} / {b}" for a, b in zip(c.a_better, c.b_better)],
        "p (Holm)": [f"{p:.2g}" for p in c.p_holm],
        "verdict": ["A more accurate" if s else "no difference shown" for s in c.significant]})


def plot_comparisons(comparison: pd.DataFrame, path: Path) -> Path | None:
    """Per source, a judge x judge grid: the row judge's accuracy minus the column judge's on the
    pairs both judged, in points, starred where the Holm-adjusted test says they differ."""
    if comparison.empty:
        return None

    def by_accuracy(g: pd.DataFrame) -> list[str]:
        accuracy = pd.concat([pd.Series(g.accuracy_a.values, g.judge_a), pd.Series(g.accuracy_b.values, g.judge_b)])
        return list(accuracy.groupby(level=0).mean().sort_values(ascending=False).index)

    alpha = 1 - comparison.confidence.iloc[0]
    return pair_grids(comparison, path, by_accuracy, lambda r: (100 * r.difference, -100 * r.difference, r.significant),
                      max(100 * comparison.difference.max(), 1.0), "Judge against judge on the same pairs: the row "
                       f"judge's accuracy\nminus the column judge's, in points; * Holm-adjusted p < {alpha:.2g}")


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
            + judge_table(comparison_table(comparison)))


def plot_error_correlation(correlation: pd.DataFrame, path: Path) -> Path:
    """Per source, a judge x judge grid of the correlation of the two judges' errors on the same
    pairs, judges from the fewest errors to the most."""
    def by_errors(g: pd.DataFrame) -> list[str]:
        errors = pd.concat([pd.Series(g.error_a.values, g.judge_a), pd.Series(g.error_b.values, g.judge_b)])
        return list(errors.groupby(level=0).mean().sort_values().index)

    return pair_grids(correlation, path, by_errors, lambda r: (r.correlation, r.correlation, False), 1.0,
                      "Which judges err together? Correlation (phi) of two judges' errors on the same pairs",
                      label="correlation", fmt=lambda v: f"{v:.2f}")


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
            f"<img src='{png.name}' alt='correlation of the judges errors'>" + judge_table(table))


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
        image = diff_grid(ax, 100 * diff.to_numpy(float), star.fillna(False).to_numpy(bool), judges, names, top)
        ax.set_title(f"{source}: each strategy minus {g.base.iloc[0]}", fontsize=10)
    return save_grids(fig, image, path, "Does a strategy help its judge? Accuracy points on the same pairs; "
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
            f"{points_text(d)} [{points_text(lo)}, {points_text(hi)}]" for d, lo, hi in zip(s.difference, s.ci_low, s.ci_high)],
        "pairs better / worse": [f"{a} / {b}" for a, b in zip(s.better, s.worse)],
        "p (Holm)": [f"{p:.2g}" for p in s.p_holm],
        "verdict": ["no difference shown" if not sig else "helps" if d > 0 else "hurts"
                    for sig, d in zip(s.significant, s.difference)]})
    return ("<h2>Does a strategy help its judge? Each strategy against the base, on the same pairs</h2><p>Per judge, "
            "each prompting strategy the benchmark recorded against its base strategy, on the labelled pairs both "
            "cover: the accuracy difference with a paired bootstrap CI and the exact paired permutation test, "
            "Holm-adjusted over the judge's strategies. Per strategy in strategy_comparison.parquet.</p>"
            f"<img src='{png.name}' alt='each strategy against the base strategy'>"
            + judge_table(table[table.verdict != "no difference shown"]) + "<p><small>Only the strategies whose difference "
            "the test shows are listed; strategy_comparison.parquet has them all.</small></p>")
