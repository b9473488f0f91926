"""Plots and tables of the PU audit."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.tables import write_json, write_table  # noqa: E402


def plot_scores(items: pd.DataFrame, eta: float, path: Path) -> Path:
    """Per judge: densities of s_j for correct and wrong verdicts, and the sorted scores
    with the flip threshold."""
    judges = sorted(items["judge"].unique())
    fig, axes = plt.subplots(2, len(judges), figsize=(3.2 * len(judges), 5.5), squeeze=False)
    for k, judge in enumerate(judges):
        sub = items[items.judge == judge]
        right = sub["verdict"] == sub["human"]
        bins = np.linspace(0, 1, 21)
        axes[0, k].hist(sub.loc[right, "score"], bins, alpha=0.6, density=True, label="judge right")
        axes[0, k].hist(sub.loc[~right, "score"], bins, alpha=0.6, density=True, label="judge wrong")
        axes[0, k].axvline(eta, color="black", ls="--", lw=0.8)
        axes[0, k].set_title(judge[:28], fontsize=8)
        axes[1, k].plot(np.sort(sub["score"].to_numpy()), lw=1)
        axes[1, k].axhline(eta, color="black", ls="--", lw=0.8)
        axes[1, k].set_xlabel("rank")
    axes[0, 0].legend(fontsize=7)
    axes[0, 0].set_ylabel("density of s_j")
    axes[1, 0].set_ylabel("sorted s_j (dashed: eta)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_projection(items: pd.DataFrame, path: Path) -> Path:
    """Per judge: the improvement vectors z in 2-D (PCA), coloured by mean score s_j;
    crosses mark verdicts that disagree with the human label."""
    judges = sorted(items["judge"].unique())
    fig, axes = plt.subplots(1, len(judges), figsize=(3.2 * len(judges), 3.2), squeeze=False)
    for ax, judge in zip(axes[0], judges):
        sub = items[items.judge == judge].groupby("pair_id").agg(
            pc1=("pc1", "first"), pc2=("pc2", "first"), score=("score", "mean"),
            right=("verdict", "first"), human=("human", "first"))
        ok = sub.right == sub.human
        for mask, marker in ((ok, "o"), (~ok, "x")):
            sc = ax.scatter(sub.pc1[mask], sub.pc2[mask], c=sub.score[mask], cmap="viridis", vmin=0,
                            vmax=1, marker=marker, s=12)
        ax.set_title(judge[:28], fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(sc, ax=axes[0].tolist(), shrink=0.8, label="mean s_j")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_radar(table: pd.DataFrame, path: Path) -> Path:
    """Consistency with human labels per question type, before and after adjustment."""
    judges = sorted(table["judge"].unique())
    qtypes = sorted(set(table["qtype"]) - {"all"})
    angles = np.linspace(0, 2 * np.pi, len(qtypes), endpoint=False).tolist()
    fig, axes = plt.subplots(1, len(judges), subplot_kw={"projection": "polar"},
                             figsize=(3.2 * len(judges), 3.4), squeeze=False)
    for ax, judge in zip(axes[0], judges):
        sub = table[table.judge == judge].set_index("qtype").reindex(qtypes)
        for col, label in (("cons_orig", "original"), ("cons_adj", "adjusted")):
            values = sub[col].tolist()
            ax.plot(angles + angles[:1], values + values[:1], label=label)
        ax.set_xticks(angles, qtypes, fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_title(judge[:28], fontsize=8)
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_pu_report(table: pd.DataFrame, sensitivity: pd.DataFrame, items: pd.DataFrame, eta: float,
                    out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"consistency": write_table(table, out_dir / "consistency.parquet"),
             "items": write_table(items, out_dir / "items.parquet"),
             "scores_png": plot_scores(items, eta, out_dir / "scores.png"),
             "radar_png": plot_radar(table, out_dir / "radar.png")}
    if "pc1" in items:
        paths["projection_png"] = plot_projection(items, out_dir / "projection.png")
    if len(sensitivity):
        paths["sensitivity"] = write_table(sensitivity, out_dir / "sensitivity.parquet")
    write_json({"consistency": table.to_dict("records"), "sensitivity": sensitivity.to_dict("records")},
               out_dir / "pu_audit.json")
    return paths
