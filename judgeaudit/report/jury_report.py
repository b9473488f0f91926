"""Can a jury replace the best judge? Majority votes of the judges against their members."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.judge_quality import pooled  # noqa: E402
from judgeaudit.report.format import judge_table  # noqa: E402
from judgeaudit.report.judge_card_report import card_grid  # noqa: E402
from judgeaudit.report.judge_comparison_report import comparison_table  # noqa: E402
from judgeaudit.report.plots import save  # noqa: E402


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
    return save(fig, path)


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
            f"<img src='{png.name}' alt='juries against their judges'>" + judge_table(table)
            + judge_table(comparison_table(juries["comparison"])))
