"""Data mixing and model scale: PLS against the share of a generator's data and against the
student's size, with the least-squares fits."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import html_table, r2_text, with_ci  # noqa: E402
from judgeaudit.report.plots import save_tight  # noqa: E402


def plot_leakage_studies(studies: dict, path: Path) -> Path:
    """PLS against the share of a generator's data, and against the student's size, with
    95% CIs and the least-squares lines."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, x, label in ((axes[0], "mixing", "share", "share of the generator's data in SFT"),
                              (axes[1], "scale", "n_parameters", "student parameters (millions)")):
        pts = pd.DataFrame(studies[key]["points"])
        fit = studies[key]["fit"]
        xs = pts[x].to_numpy(float) / (1e6 if key == "scale" else 1)
        ax.errorbar(xs, pts.estimate, yerr=[pts.estimate - pts.ci_low, pts.ci_high - pts.estimate], fmt="o",
                    color="steelblue", capsize=3)
        line = np.linspace(xs.min(), xs.max(), 20)
        scale = 1e6 if key == "scale" else 1
        ax.plot(line, fit["intercept"] + fit["slope"] * line * scale, color="crimson", lw=1,
                label=f"slope {fit['slope'] * scale:+.3f} [{fit['slope_ci_low'] * scale:+.3f}, "
                      f"{fit['slope_ci_high'] * scale:+.3f}], R² {r2_text(fit['r2'])}")
        ax.axhline(0, color="grey", lw=0.6, ls=":")
        ax.set_xlabel(label)
        ax.set_ylabel(f"PLS ({studies['tier']} tier, 95% CI)")
        ax.legend(fontsize=7)
    return save_tight(fig, path)


def _points(points: list[dict], keys: list[str]) -> pd.DataFrame:
    """A study's points as its keys and "PLS [CI] (n)", in the order studied."""
    frame = pd.DataFrame(points)
    table = frame[keys].copy()
    if "n_parameters" in table:
        table["n_parameters"] = table["n_parameters"].astype("int64")
    table["PLS [95% CI] (n prompts)"] = with_ci(frame.estimate, frame, "+.3f")
    return table


def studies_section(studies: dict | None, out_dir: Path) -> str:
    """The mixing and scale studies' HTML and plot; "" where they did not run."""
    if not studies or "mixing" not in studies:
        return ""
    png = plot_leakage_studies(studies, out_dir / "leakage_studies.png")
    mix, scale = studies["mixing"], studies["scale"]
    fit = {k: studies[k]["fit"] for k in ("mixing", "scale")}
    return (f"<h2>Data mixing and model scale</h2><p>SFT students of their own, scored by the "
            f"{studies['tier']}-tier judges ({', '.join(studies['judges'])}). Mixing: {studies['mixing_student']} "
            "trained on each generator's answers for a share of the training prompts and neutral answers (the "
            f"reference answer in {' or '.join(studies.get('neutral_styles', ['a house style']))}) for the rest; the study: even 10% leaks and PLS grows "
            f"linearly. Slope {fit['mixing']['slope']:+.3f} [{fit['mixing']['slope_ci_low']:+.3f}, "
            f"{fit['mixing']['slope_ci_high']:+.3f}] per unit share, R² {r2_text(fit['mixing']['r2'])}; the lowest share "
            f"({fit['mixing']['lowest_share']:g}) {'leaks' if fit['mixing']['lowest_share_leaks'] else 'shows no leakage'} "
            "(CI above zero or not). Scale: student bases of several sizes, each trained at share "
            f"{fit['scale'].get('share', 1):g}; the study: smaller students leak more. Slope {fit['scale']['slope_per_million']:+.4f} per million parameters, R² "
            f"{r2_text(fit['scale']['r2'])}.</p>" + html_table(_points(mix["points"], ["share"]))
            + html_table(_points(scale["points"], ["student_base", "n_parameters"]))
            + f"<img src='{png.name}' alt='leakage studies'>")
