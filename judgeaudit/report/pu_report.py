"""Plots and tables of the PU audit, and its section of the audit report."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.audits.pu_audit import agreement_gain, suspect_auc  # noqa: E402
from judgeaudit.audits.stats import mean_ci  # noqa: E402
from judgeaudit.report.format import copy_images, html_table  # noqa: E402
from judgeaudit.report.paper_rows import paper_row  # noqa: E402
from judgeaudit.tables import write_json, write_table  # noqa: E402


def plot_scores(items: pd.DataFrame, eta: float, path: Path) -> Path:
    """Per judge: densities of s_j for correct and wrong verdicts, and the sorted scores
    with the flip threshold."""
    judges = sorted(items["judge"].unique())
    # fixed margins, not tight_layout (a second full draw), and one step outline per
    # density, not a bar patch per bin: a stage draws six of these figures
    fig, axes = plt.subplots(2, len(judges), figsize=(3.2 * len(judges), 5.5), squeeze=False,
                             gridspec_kw=dict(left=0.04, right=0.99, bottom=0.09, top=0.94, wspace=0.3,
                                              hspace=0.3))
    bins = np.linspace(0, 1, 21)
    for k, judge in enumerate(judges):
        sub = items[items.judge == judge]
        score = sub["score"].to_numpy(dtype=float)
        right = (sub["verdict"] == sub["human"]).to_numpy()
        for mask, label in ((right, "judge right"), (~right, "judge wrong")):
            if mask.any():
                density, _ = np.histogram(score[mask], bins, density=True)
                axes[0, k].stairs(density, bins, fill=True, alpha=0.6, label=label)
        axes[0, k].axvline(eta, color="black", ls="--", lw=0.8)
        axes[0, k].set_title(judge[:28], fontsize=8)
        axes[1, k].plot(np.sort(score), lw=1)
        axes[1, k].axhline(eta, color="black", ls="--", lw=0.8)
        axes[1, k].set_xlabel("rank")
    axes[0, 0].legend(fontsize=7)
    axes[0, 0].set_ylabel("density of s_j")
    axes[1, 0].set_ylabel("sorted s_j (dashed: eta)")
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


_RINGS = (0.25, 0.5, 0.75, 1.0)


def _radar(ax, labels: list[str], series: dict[str, np.ndarray]) -> None:
    """A radar chart on plain axes (spokes from the top, counter-clockwise; rings at
    0.25..1 with the 0.5 and 1 rings labelled): a polar Axes costs several times more to
    build and draw, and the stage draws one per judge and condition."""
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False) + np.pi / 2
    closed = np.append(angles, angles[0])
    grid = [np.c_[r * np.cos(closed), r * np.sin(closed)] for r in _RINGS]
    grid += [np.array([[0.0, 0.0], [np.cos(a), np.sin(a)]]) for a in angles]
    ax.add_collection(LineCollection(grid, colors="0.82", linewidths=0.6))
    for name, values in series.items():
        v = np.append(values, values[0])
        ax.plot(v * np.cos(closed), v * np.sin(closed), lw=1.2, label=name)
    for a, label in zip(angles, labels):
        ax.text(1.14 * np.cos(a), 1.14 * np.sin(a), label, ha="center", va="center", fontsize=7)
    between = angles[0] + np.pi / len(labels)  # ring values halfway to the next spoke
    for r in (0.5, 1.0):
        ax.text(r * np.cos(between), r * np.sin(between), f"{r:g}", fontsize=6, color="0.45",
                ha="center", va="center")
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.axis("off")


def plot_radar(table: pd.DataFrame, path: Path) -> Path:
    """Consistency with human labels per question type, before and after adjustment: one
    panel per judge (and per condition, one row each, where the table has conditions)."""
    judges = sorted(table["judge"].unique())
    conditions = list(dict.fromkeys(table["condition"])) if "condition" in table else [None]
    qtypes = sorted(set(table["qtype"]) - {"all"})
    fig, axes = plt.subplots(len(conditions), len(judges), figsize=(3.2 * len(judges), 3.4 * len(conditions)),
                             squeeze=False, gridspec_kw=dict(left=0.01, right=0.99, bottom=0.01,
                                                             top=1 - 0.35 / len(conditions), wspace=0.1,
                                                             hspace=0.2))
    for (i, condition), (k, judge) in ((a, b) for a in enumerate(conditions) for b in enumerate(judges)):
        sub = table[table.judge == judge]
        if condition is not None:
            sub = sub[sub.condition == condition]
        sub = sub.set_index("qtype").reindex(qtypes)
        _radar(axes[i, k], qtypes, {"original": sub["cons_orig"].to_numpy(dtype=float),
                                    "adjusted": sub["cons_adj"].to_numpy(dtype=float)})
        axes[i, k].set_title(judge[:28] if condition is None else f"{judge[:24]}, {condition}", fontsize=8)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="upper left", fontsize=8, ncol=2,
               title="consistency with the human label", title_fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_sensitivity(sens: pd.DataFrame, path: Path) -> Path:
    """Mean gain of the adjustment (Cons_adj - Cons_orig, over judges) against the share
    of verified pairs (m estimated) and against the transport mass m (at the set share),
    the paper's two sweeps; a line per condition."""
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0), squeeze=False, sharey=True)
    conditions = list(dict.fromkeys(sens["condition"])) if "condition" in sens else [None]
    gain = sens.assign(gain=sens["cons_adj"] - sens["cons_orig"])
    for ax, (sweep, x, label) in zip(axes[0], (("p_ratio", "p_ratio", "p_ratio (share verified)"),
                                               ("m", "m", "transport mass m"))):
        for condition in conditions:
            sub = gain[gain.sweep == sweep]
            sub = sub if condition is None else sub[sub.condition == condition]
            mean = sub.groupby(x)["gain"].mean()
            ax.plot(mean.index, mean.to_numpy(), marker="o", label=condition or "all judges")
        ax.axhline(0, color="black", lw=0.8, ls="--")
        ax.set_xlabel(label)
    axes[0, 0].set_ylabel("Cons_adj - Cons_orig")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


PAPER = "PU audit (Zhang et al., 2026, arXiv 2606.19057)"
OVERLAY = "pu (params-gpu.yaml)"
TABLE5 = "+1.4 to +3.7 points (MT-Bench, Chatbot Arena)"


def pu_paper_rows(items: pd.DataFrame, sens: pd.DataFrame, *, definitions: str, seed: int, n_boot: int,
                  confidence: float, embedded: bool = True) -> list[dict]:
    """The Papers rows of the PU audit: the agreement gain clean and under each attack (the
    paper's Table 5 and attack tables), s_j's AUC for wrong verdicts, and the m sweep's ends
    (the collapse at small m). ``embedded``: the judges are the embedded default's (else an
    overlay's checkpoints)."""
    named = {"paper": "paper's", "ours": "our"}.get(definitions, definitions)
    who = "embedded judges" if embedded else "the overlay's judges (their checkpoints)"
    how = (f"{who} on known-quality pairs (correct vs degraded answer) in place of human-labelled "
           f"MT-Bench / Chatbot Arena pairs; MiniLM in place of a reward model's embedding; {named} definitions")
    rows = []
    for condition, sub in items.groupby("condition", sort=False):
        est = mean_ci(agreement_gain(sub, ("judge", "pair_id")), n_boot=n_boot, confidence=confidence, seed=seed)
        is_clean = condition == "clean"
        # Table 5's range is the paper's, as issue 67 quotes it (MT-Bench and Chatbot Arena, a
        # reward model's embeddings); the attack tables' figures were not read offline
        rows.append(paper_row(PAPER, "Table 5" if is_clean else "attack robustness",
                              f"agreement gain after correction (Cons_adj - Cons_orig), {condition}",
                              paper_value=TABLE5 if is_clean else None,
                              ours=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high, n=est.n,
                              reproduces=bool(est.ci_low > 0) if is_clean else None,
                              differs=how + ("; reproduces where our CI shows a gain (above zero)" if is_clean
                                             else "; paper's figure not read offline"), overlay=OVERLAY))
    clean = items[items.condition == "clean"] if "condition" in items else items
    auc = suspect_auc(clean.assign(pair_id=clean["judge"] + "/" + clean["pair_id"].astype(str)),
                      n_boot=n_boot, confidence=confidence, seed=seed)
    rows.append(paper_row(PAPER, "confidence estimates", "AUC of a low s_j for a wrong verdict, clean",
                          ours=auc["auc"], ci_low=auc["auc_ci_low"], ci_high=auc["auc_ci_high"], n=auc["n"],
                          differs=how + "; not read offline", overlay=OVERLAY))
    msweep = sens[(sens.sweep == "m") & (sens.condition == "clean")] if "condition" in sens else sens[sens.sweep == "m"]
    for m in (msweep["m"].min(), msweep["m"].max()) if len(msweep) else ():
        at = msweep[np.isclose(msweep["m"], m)]
        rows.append(paper_row(PAPER, "m sweep (sensitivity)", f"agreement gain at m = {m:g}, clean, mean over judges",
                              ours=float(at["gain"].mean()), n=int(at["n_pairs"].sum()),
                              ci_low=float(at["gain_ci_low"].mean()), ci_high=float(at["gain_ci_high"].mean()),
                              differs=how + "; CI: the judges' CIs averaged; not read offline", overlay=OVERLAY))
    return rows


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
        paths["sensitivity_png"] = plot_sensitivity(sensitivity, out_dir / "sensitivity.png")
    write_json({"consistency": table.to_dict("records"), "sensitivity": sensitivity.to_dict("records")},
               out_dir / "pu_audit.json")
    return paths


def default_plots(table: pd.DataFrame, items: pd.DataFrame, sens: pd.DataFrame, eta: float,
                  out_dir: Path) -> dict[str, Path]:
    """The embedded audit's plots: radar per judge x condition, the sensitivity sweep,
    and the s_j diagnostics per condition."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"radar": plot_radar(table[table.qtype.notna()], out_dir / "radar.png"),
             "sensitivity": plot_sensitivity(sens, out_dir / "sensitivity.png")}
    for condition, sub in items.groupby("condition", sort=False):
        paths[f"scores_{condition}"] = plot_scores(sub, eta, out_dir / f"scores_{condition}.png")
    return paths


def pu_section(pu: dict | None, out_dir: Path) -> str:
    """The PU audit's HTML, with the stage's plots copied beside the report; "" where it did not run."""
    if not pu or "consistency" not in pu:
        return ""
    cols = ["judge", "condition", "n_pairs", "n_excluded", "cons_orig", "cons_orig_std", "cons_orig_ci_low",
            "cons_orig_ci_high", "cons_adj", "cons_adj_std", "cons_adj_ci_low", "cons_adj_ci_high",
            "flip_rate"]
    cons = pd.DataFrame(pu["consistency"])
    text = ("<h2>PU audit of the judges (known-quality pairs)</h2><p>Consistency of each judge "
            "with the known-correct answer before (orig) and after (adj) the partial-OT "
            "adjustment, mean and std over splits, 95% CI over pairs; clean and after each "
            "presentation attack on the response the judge made lose. Pairs that a judge tied (no "
            "order decided) are excluded and counted (n_excluded); under attack the verified positives "
            "are the clean verdicts of the same pairs, only the unlabelled ones are attacked.</p>"
            + html_table(cons[[c for c in cols if c in cons]])
            + "<h3>Attack flip rates</h3>" + html_table(pd.DataFrame(pu["attack_flip_rates"])))
    if pu.get("sensitivity"):
        sens = pd.DataFrame(pu["sensitivity"]).assign(gain=lambda d: d.cons_adj - d.cons_orig)
        sens["at"] = np.where(sens["sweep"] == "m", sens["m"], sens["p_ratio"])
        grid = sens.pivot_table(index=["sweep", "at"], columns="condition", values="gain", sort=False).round(3)
        text += ("<h3>Sensitivity: share verified (p_ratio, m estimated) and transport mass m (at the set "
                 "share), 0.01 to 0.99 as the paper sweeps</h3><p>Mean over judges of Cons_adj - Cons_orig.</p>"
                 + html_table(grid.reset_index()))
    if pu.get("encoders"):
        enc = pd.DataFrame(pu["encoders"])
        orig = enc.groupby(["judge", "condition"], sort=False)["cons_orig"].first().rename("cons_orig")
        if "definitions" in enc:
            enc["encoder"] = enc["encoder"] + ", " + enc["definitions"] + " definitions"
        enc = pd.concat([orig, enc.pivot_table(index=["judge", "condition"], columns="encoder", values="cons_adj",
                                               sort=False)], axis=1).round(3)
        text += ("<h3>Encoder and definitions comparison</h3><p>Cons_adj (all question types) with each encoder "
                 "F(x, o) on the same verdicts: the shipped MiniLM (mean pooling) under the paper's definitions "
                 "(P-core on the winner's embedding, every labelled pair a positive) and ours (P-core on z, only "
                 "pairs the judge got right), and a decoder read at its last token, as a reward model reads a "
                 "response.</p>" + html_table(enc.reset_index()))
    if pu.get("plots") and pu.get("dir"):
        text += copy_images(pu["plots"], Path(pu["dir"]), out_dir, "pu_")
    return text
