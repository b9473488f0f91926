"""Reward-model prefix bias: omega and alpha matrices, and alpha-bar across bases."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import html_table  # noqa: E402


def plot_prefix_heatmaps(matrices: pd.DataFrame, path: Path) -> Path:
    """omega and alpha matrices, one panel per (source, variant, group, kind)."""
    keys = [k for k in ("source", "variant", "trained_group", "group", "kind") if k in matrices]
    panels = list(matrices.groupby(keys, sort=True))
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (key, m) in zip(axes.flat, panels):
        labels = list(dict.fromkeys(m.p1))
        grid = m.pivot(index="p1", columns="p2", values="estimate").reindex(index=labels, columns=labels)
        im = ax.imshow(grid.to_numpy(), cmap="RdBu_r", vmin=-0.3, vmax=0.3)
        names = [p.strip() or "(none)" for p in labels]
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=6)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        for (r, c), v in np.ndenumerate(grid.to_numpy()):
            ax.text(c, r, f"{v:+.2f}", ha="center", va="center", fontsize=6)
        ax.set_title(" / ".join(str(k) for k in key if k != "-"), fontsize=7)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_prefix_models(rows: pd.DataFrame, path: Path) -> Path:
    """The cross-model view: alpha-bar (mean over groups) per base and variant, a panel per
    source; the accuracy on unprefixed pairs above each bar group."""
    sources = list(dict.fromkeys(rows.source))
    fig, axes = plt.subplots(1, len(sources), figsize=(5.0 * len(sources), 3.2), squeeze=False)
    variants = list(dict.fromkeys(rows.variant))
    for ax, source in zip(axes[0], sources):
        sub = rows[rows.source == source]
        bases = list(dict.fromkeys(sub.base))
        width = 0.8 / len(variants)
        for k, variant in enumerate(variants):
            vals = sub[sub.variant == variant].groupby("base")["alpha_bar"].mean().reindex(bases)
            ax.bar(np.arange(len(bases)) + k * width, vals.to_numpy(), width, label=variant)
        ax.set_xticks(np.arange(len(bases)) + width * (len(variants) - 1) / 2, bases, fontsize=8)
        ax.set_title(source, fontsize=9)
        ax.set_ylabel("alpha-bar (cross-influence)")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def prefix_section(prefix: dict | None, out_dir: Path) -> str:
    """The prefix-bias audit's HTML and plots; "" where it did not run."""
    if not prefix or "rows" not in prefix["summary"]:
        return ""
    summary = prefix["summary"]
    rows = pd.DataFrame(summary["rows"])
    matrices = prefix["matrices"]
    main = matrices[matrices.base == summary["main_base"]] if "base" in matrices else matrices
    heat = plot_prefix_heatmaps(main, out_dir / "prefix_bias.png")
    models = plot_prefix_models(rows, out_dir / "prefix_models.png")
    rows["accuracy"] = [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in
                        zip(rows.accuracy, rows.accuracy_ci_low, rows.accuracy_ci_high)]
    for bar in ("omega_bar", "alpha_bar"):  # with its CI where the stage measured one
        if f"{bar}_ci_low" in rows:
            rows[f"{bar} [CI]"] = [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" for v, lo, hi in
                                   zip(rows[bar], rows[f"{bar}_ci_low"], rows[f"{bar}_ci_high"])]
    if "fingerprint" in rows:
        rows["fingerprint"] = [f"{f:.3f} [{lo:.3f}, {hi:.3f}]" if f == f else "" for f, lo, hi in
                               zip(rows.fingerprint, rows.fingerprint_ci_low, rows.fingerprint_ci_high)]
    bars = [f"{b} [CI]" if f"{b} [CI]" in rows else b for b in ("omega_bar", "alpha_bar")]
    table = rows[["source", "base", "variant", "trained_group", "group", *bars, "accuracy",
                  "accuracy_ratio", "n_test", *(["fingerprint"] if "fingerprint" in rows else [])]]
    cross = rows.pivot_table(index=["source", "variant", "group"], columns="base", values="alpha_bar",
                             sort=False).round(3).reset_index()
    notes = "".join(f"<li>{k}: {v}</li>" for k, v in summary.get("sources", {}).items())
    return ("<h2>Reward-model prefix bias</h2><p>omega-bar: mean |w(p1,p2) - 0.5| (auto-influence); "
            "alpha-bar: mean |acc(p1 on chosen, p2 on rejected) - acc(no prefix)| (cross-influence), "
            "over distinct prefixes; per-cell CIs in report.json. zero-shot: the base judging without "
            "training (its fingerprint, beside its trained RMs); fingerprint: per answer, the share of prefix "
            "pairs on which the RM prefers the same prefix as its base zero-shot (0.5: chance), mean with a "
            "95% CI over answers; baseline: the RM on the plain pairs; aug: "
            "the RM augmented with one group's prefixes, audited on that group; aug-gen: the same RM "
            "audited on the other groups (trained_group names the group it was augmented with). "
            f"Accuracy on unprefixed test pairs with a 95% CI; bars with 95% CIs (answers resampled). "
            f"Augmentation: {summary.get('aug_pairs', '?')} prefixed copies per item; architectures: "
            f"{', '.join(f'{b}: {a}' for b, a in summary.get('architectures', {}).items()) or 'not recorded'}."
            f"</p><ul>{notes}</ul>" + html_table(table)
            + "<h3>Across bases: alpha-bar</h3>" + html_table(cross)
            + f'<img src="{models.name}" alt="alpha-bar per base"><h3>Matrices of the main base ('
            + f'{summary["main_base"]})</h3><img src="{heat.name}" alt="prefix bias heatmaps">')


PAPER = "Prefix bias in reward models (Kumar et al., 2025)"
PAPER_BIAS = "significant prefix bias across gender and race (abstract, arXiv 2505.13487)"
PAPER_AUG = "the augmentation reduces the prefix bias (abstract, arXiv 2505.13487)"
PAPER_ARCH = "bias regardless of the reward model's architecture (abstract, arXiv 2505.13487)"


def _differs(embedded: bool, source: str, n_pairs: int, aug_pairs: int) -> str:
    data = ("synthetic template pairs with a planted cue" if source == "synthetic"
            else f"{n_pairs} hh-rlhf harmless-base test pairs, split in train and test")
    if embedded:
        return (f"tiny models of our own (0.3-1.3M parameters, 256-token context) as reward bases, on {data}; "
                f"augmentation x{aug_pairs}")
    return f"the overlay's real bases (smaller than the paper's), on {data}; augmentation x{aug_pairs}"


def prefix_paper_rows(summary: dict, *, embedded: bool, overlay: str) -> list[dict]:
    """The paper's main tables beside ours: omega-bar and alpha-bar of the main base's
    reward model before (baseline) and after augmentation (aug), per source and group; the
    baseline's accuracy; and the baseline's alpha-bar on every base (architectures).
    "reproduces": before, some cell's CI excludes 0; after, the aug bar's CI lies below the
    baseline bar's; across architectures, some cell's CI excludes 0 on that base."""
    from judgeaudit.report.paper_rows import paper_row

    rows = pd.DataFrame(summary["rows"])
    aug_pairs = int(summary.get("aug_pairs", 0))
    arch = summary.get("architectures", {})
    out = []
    for (source, base), g in rows.groupby(["source", "base"], sort=False):
        n_pairs = int(g.n_test.iloc[0])
        kw = dict(differs=_differs(embedded, source, n_pairs, aug_pairs), overlay=overlay)
        line = g.set_index(["variant", "group"])
        main = base == summary["main_base"]
        for group in summary["groups"]:
            before = line.loc[("baseline", group)]
            if main:
                after = line.loc[("aug", group)]
                for bar in ("omega", "alpha"):
                    ours = lambda r: dict(ours=r[f"{bar}_bar"], ci_low=r[f"{bar}_bar_ci_low"],  # noqa: E731
                                          ci_high=r[f"{bar}_bar_ci_high"], n=int(r[f"{bar}_n"]))
                    out.append(paper_row(PAPER, f"{bar} before augmentation",
                                         f"{bar}-bar, baseline RM, {group}, {source}, base {base}",
                                         paper_value=PAPER_BIAS, reproduces=bool(before[f"{bar}_cells_clear"] > 0),
                                         **ours(before), **kw))
                    out.append(paper_row(PAPER, f"{bar} after augmentation",
                                         f"{bar}-bar, RM augmented with {group}'s prefixes, {source}, base {base}",
                                         paper_value=PAPER_AUG,
                                         reproduces=bool(after[f"{bar}_bar_ci_high"] < before[f"{bar}_bar_ci_low"]),
                                         **ours(after), **kw))
            if source == "synthetic":
                out.append(paper_row(PAPER, "across architectures",
                                     f"alpha-bar, baseline RM, {group}, base {base} ({arch.get(base, '?')})",
                                     paper_value=PAPER_ARCH, reproduces=bool(before["alpha_cells_clear"] > 0),
                                     ours=before["alpha_bar"], ci_low=before["alpha_bar_ci_low"],
                                     ci_high=before["alpha_bar_ci_high"], n=int(before["alpha_n"]), **kw))
        if main:
            first = line.loc["baseline"].iloc[0]
            out.append(paper_row(PAPER, "reward model accuracy",
                                 f"baseline RM accuracy on unprefixed test pairs, {source}, base {base} (0.5: chance)",
                                 ours=first["accuracy"], ci_low=first["accuracy_ci_low"],
                                 ci_high=first["accuracy_ci_high"], n=int(first["n_test"]), **kw))
    return out
