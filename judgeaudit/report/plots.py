"""What the report's plots share: saving a figure and freeing it, bars with CIs per group,
and the judge x judge (or judge x strategy) grids of differences."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def save(fig: plt.Figure, path: Path) -> Path:
    """Write a report plot and free it."""
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def save_tight(fig: plt.Figure, path: Path) -> Path:
    """Lay a report plot out tight, write it and free it."""
    fig.tight_layout()
    return save(fig, path)


def grouped_bars(ax: plt.Axes, frame: pd.DataFrame, x: str, ticks: list[str]) -> None:
    """At each of ``ticks`` (values of column ``x``), a bar per ``who`` (sorted): the estimate
    with its CI."""
    series = sorted(frame.who.unique())
    width = 0.8 / len(series)
    for k, who in enumerate(series):
        part = frame[frame.who == who].set_index(x).reindex(ticks)
        ax.bar(np.arange(len(ticks)) + k * width, part.estimate, width, label=who, capsize=2,
               yerr=np.vstack([part.estimate - part.ci_low, part.ci_high - part.estimate]))
    ax.set_xticks(np.arange(len(ticks)) + 0.4 - width / 2, ticks, fontsize=8)


def _points(value: float) -> str:
    return "0" if abs(value) < 0.5 else f"{value:+.0f}"


def diff_grid(ax: plt.Axes, diff: np.ndarray, star: np.ndarray, rows: list[str], cols: list[str],
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


def save_grids(fig: plt.Figure, image: matplotlib.image.AxesImage, path: Path, title: str, shrink: float,
               label: str = "points") -> Path:
    """Title the grids, give them one colour bar (in ``label``), write the figure to ``path``."""
    fig.suptitle(title, fontsize=10)
    fig.colorbar(image, ax=fig.axes, shrink=shrink, label=label)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def pair_grids(frame: pd.DataFrame, path: Path, names_of: Callable[[pd.DataFrame], list[str]],
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
        image = diff_grid(ax, grid, star, order, order, top, fmt)
        ax.set_title(source, fontsize=10)
    return save_grids(fig, image, path, title, shrink=0.5, label=label)
