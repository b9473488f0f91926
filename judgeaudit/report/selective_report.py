"""Trust or escalate: the pairs each judge can be trusted with, how far its confidence ranks
right verdicts above wrong ones (per subset), and its reliability diagrams."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.judge_quality import ALL  # noqa: E402
from judgeaudit.report.format import ci_cells, judge_table  # noqa: E402
from judgeaudit.report.plots import diff_grid, save, save_grids  # noqa: E402


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
    return save(fig, path)


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
        image = diff_grid(ax, est.to_numpy(float), star, list(est.index), list(est.columns), 0.5,
                          fmt=lambda v: f"{v:.2f}", centre=0.5)
        ax.set_title(source, fontsize=10)
    return save_grids(fig, image, path, "AUROC of each judge's confidence per subset (0.5: chance; *: its CI "
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
    return save(fig, path)


def selective_section(kept: pd.DataFrame | None, out_dir: Path, bins: pd.DataFrame | None = None) -> str:
    """Trust or escalate: the plot and a row per judge; the confidence per subset and its reliability
    diagrams, where there are rows for them."""
    if kept is None or kept.empty:
        return ""
    png = plot_selective(kept, out_dir / "judges_selective.png")
    diagram = None if bins is None or bins.empty else plot_reliability(bins, out_dir / "judges_reliability.png", kept)
    by_subset = plot_confidence_by_subset(kept, out_dir / "judges_confidence_by_subset.png")
    parts = kept[(kept.metric == "auroc") & (kept.subset != ALL)]
    parts = [g.assign(cell=ci_cells(g, with_n=True)).pivot(index=["source", "judge"], columns="subset",
                                                         values="cell").reset_index().rename_axis(columns=None)
             for _, g in parts.groupby("source", sort=True)]  # a table per source: its own subsets
    kept = kept[kept.subset == ALL]
    cells = kept.assign(cell=ci_cells(kept, with_n=True))
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
            f"<img src='{png.name}' alt='selective evaluation per judge'>" + judge_table(table)
            + ("" if by_subset is None else
               "<p>The same AUROC per subset of the benchmark (its rows of selective.parquet also hold ece and "
               "overconfidence): a confidence that ranks on plain pairs can run backwards on adversarial ones, "
               "where the wrong output is built to look better and a judge picks it again and again.</p>"
               f"<img src='{by_subset.name}' alt='AUROC per judge and subset'>" + "".join(map(judge_table, parts)))
            + ("" if diagram is None else
               "<p>Where ECE comes from: per bin of confidence (ten equal bins, both orders of every pair), the "
               "share of the judge's verdicts right against their mean confidence, with CIs that resample "
               "pairs (exact binomial ones where a bin's verdicts are all right or all wrong), a panel per "
               "judge titled with its ECE, over a bar of how its verdicts spread across the "
               "bins; a judge on the diagonal is calibrated, one below it overconfident, and a line that falls "
               "as confidence rises is surer when wrong. Rows in reliability.parquet.</p>"
               f"<img src='{diagram.name}' alt='reliability diagram per judge'>"))
