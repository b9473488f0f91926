"""Can the judge replace a human annotator? The alternative annotator test's section."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import ci_text, judge_table  # noqa: E402
from judgeaudit.report.plots import save  # noqa: E402


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
    return save(fig, path)


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
        f"advantage probability [{level} CI]": [ci_text(e, lo, hi) for e, lo, hi in
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
            f"<img src='{png.name}' alt='alt-test per judge'>" + judge_table(table) + judge_table(per.round(3)))
