"""The live judge under presentation attacks: flip and fooled rates with CIs."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import ci_cells, judge_table  # noqa: E402
from judgeaudit.report.plots import grouped_bars, save  # noqa: E402


def plot_attacks(attacks: pd.DataFrame, path: Path) -> Path:
    """Flip and fooled rates per attack, a bar per judge x strategy, with 95% CIs."""
    pooled = attacks[attacks.subset == "all"].assign(who=lambda f: f.judge + " (" + f.strategy + ")")
    metrics = [m for m in ("flip_rate", "fooled_rate") if (pooled.metric == m).any()]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        grouped_bars(ax, pooled[pooled.metric == metric], "attack", list(dict.fromkeys(pooled.attack)))
        ax.set_ylim(0, 1.05)
        ax.set_title({"flip_rate": "attacked loser now wins (all decided pairs)",
                      "fooled_rate": "right verdicts turned wrong (labelled pairs)"}[metric], fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, path)


def attacks_section(attacks: pd.DataFrame, out_dir: Path) -> str:
    """The live judge under presentation attacks: rates with CIs, and their plot."""
    if attacks.empty:
        return ""
    table = attacks.assign(value=ci_cells(attacks, with_n=True)).pivot_table(index=["judge", "strategy", "attack", "subset"], columns="metric", values="value",
                              aggfunc="first", sort=False).reset_index()
    table.columns.name = None
    png = plot_attacks(attacks, out_dir / "judges_attacks.png")
    return ("<h2>Presentation attacks on the live judge</h2><p>Each attack rewrites the response the judge made "
            "lose on a pair it decided (its verdict over both orders); the pair is judged again in both orders. "
            "flip_rate: the attacked response now wins; fooled_rate: the same over labelled pairs the judge had "
            "right, where the attacked response is the wrong one. Per pair in attack_pairs.parquet.</p>"
            + judge_table(table) + f"<img src='{png.name}' alt='flip and fooled rates per attack'>")
