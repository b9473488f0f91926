"""The preference-leakage section of the report: PLS by association tier and method (table,
plot and the plot's data), win rates, and PLS by task type."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import html_table, with_ci  # noqa: E402


TIER_ORDER = ["same", "inheritance", "same_family"]


def pls_plot_data(pls: pd.DataFrame) -> pd.DataFrame:
    """PLS per association tier and method, its CI and n, tiers in TIER_ORDER: what
    ``plot_pls`` draws, and the data of dvc.yaml's PLS plot (``dvc plots diff`` overlays
    experiments)."""
    cells = pls[(pls.scope == "method") & pls.tier.isin(TIER_ORDER)]
    cells = cells.assign(rank=cells.tier.map(TIER_ORDER.index)).sort_values(["rank", "method"], kind="stable")
    return pd.DataFrame({"cell": cells.tier + " / " + cells.method.str.upper(), "tier": cells.tier,
                         "method": cells.method, "estimate": cells.estimate, "ci_low": cells.ci_low,
                         "ci_high": cells.ci_high, "n": cells.n}).reset_index(drop=True)


def plot_pls(pls: pd.DataFrame, path: Path) -> Path:
    """Bar chart: PLS per association tier and method, with CI whiskers."""
    cells = pls_plot_data(pls)
    tiers = list(dict.fromkeys(cells.tier))
    methods = sorted(set(cells.method))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / max(len(methods), 1)
    for k, method in enumerate(methods):
        sub = cells[cells.method == method].set_index("tier").reindex(tiers)
        x = np.arange(len(tiers)) + k * width
        err = np.vstack([sub.estimate - sub.ci_low, sub.ci_high - sub.estimate])
        ax.bar(x, sub.estimate, width, yerr=err, capsize=3, label=method.upper())
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(np.arange(len(tiers)) + width * (len(methods) - 1) / 2, tiers)
    ax.set_ylabel("Preference Leakage Score")
    ax.set_title("PLS by association tier and method (95% bootstrap CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_win_rates(wr: pd.DataFrame, path: Path) -> Path:
    """Heatmap: mean win rate of each generator's students (rows) under each judge (columns)."""
    table = wr.groupby(["student_generator", "judge"])["estimate"].mean().unstack()
    fig, ax = plt.subplots(figsize=(1.6 + 0.75 * table.shape[1], 2.0 + 0.5 * table.shape[0]))
    im = ax.imshow(table.to_numpy(), cmap="RdBu_r", vmin=0, vmax=1)
    ax.set_xticks(range(table.shape[1]), table.columns, rotation=45, ha="right")
    ax.set_yticks(range(table.shape[0]), table.index)
    for (r, c), v in np.ndenumerate(table.to_numpy()):
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xlabel("judge")
    ax.set_ylabel("students of generator")
    fig.colorbar(im, ax=ax, shrink=0.8, label="mean win rate")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summary_table(pls: pd.DataFrame) -> pd.DataFrame:
    """Tiers side by side: PLS [CI] per method, and over all methods."""
    agg = pls[pls.scope.isin(["method", "tier"])].copy()
    agg["cell"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n})" for e, lo, hi, n in
                   zip(agg.estimate, agg.ci_low, agg.ci_high, agg.n)]
    table = agg.pivot(index="method", columns="tier", values="cell")
    return table[[t for t in TIER_ORDER if t in table.columns]].reset_index()


def task_type_section(summary: dict) -> str:
    """PLS by task type (objective, subjective) and tier; "" where the audit did not split them."""
    by_type = summary.get("pls_by_task_type")
    if not by_type:
        return ""
    table = pd.DataFrame([{"task type": k.split("/")[0], "tier": k.split("/")[1], **v} for k, v in by_type.items()])
    table["PLS [CI] (n)"] = with_ci(table.estimate, table, "+.3f")
    table = table.pivot(index="tier", columns="task type", values="PLS [CI] (n)").reset_index()
    return ("<h2>PLS by task type</h2><p>Objective prompts have a checkable answer (arithmetic, capitals...); "
            "subjective ones are open (describe, suggest, opinion), where style is free. The study: subjective "
            "tasks leak more. Per category in data/metrics/pls_by_task.parquet.</p>" + html_table(table))
