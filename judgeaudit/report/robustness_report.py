"""Robustness of the leakage finding: the spurious-feature ablation, presentation attacks,
mitigations, length- and style-controlled win rates, and recognition."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import copy_images, html_table, with_ci  # noqa: E402
from judgeaudit.report.leakage_paper import MITIGATIONS as MITIGATION_ORDER  # noqa: E402  the paper's order
from judgeaudit.report.plots import save_tight  # noqa: E402


def plot_mitigations(table: pd.DataFrame, path: Path) -> Path:
    """PLS and Error Bias per mitigation and tier, with CIs (0: no leakage)."""
    metrics = [m for m in ("pls", "error_bias") if m in set(table.metric)]
    tiers = sorted(set(table.tier))
    conditions = [c for c in MITIGATION_ORDER if c in set(table.condition)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for k, tier in enumerate(tiers):
            rows = table[(table.metric == metric) & (table.tier == tier)].set_index("condition").reindex(conditions)
            ys = np.arange(len(conditions)) + (k - (len(tiers) - 1) / 2) * 0.18
            ax.errorbar(rows.estimate, ys, xerr=[rows.estimate - rows.ci_low, rows.ci_high - rows.estimate],
                        fmt="o", capsize=2, label=tier)
        ax.axvline(0, color="grey", lw=0.6, ls=":")
        ax.set_yticks(np.arange(len(conditions)), conditions)
        ax.invert_yaxis()
        ax.set_xlabel({"pls": "PLS", "error_bias": "Error Bias"}[metric] + " (95% CI)")
        ax.legend(fontsize=7, title="tier", title_fontsize=7)
    return save_tight(fig, path)


def robustness_section(robust: dict | None, out_dir: Path) -> str:
    """The robustness stage's HTML (ablation, attacks, mitigations, controlled win rates,
    recognition), its plots copied beside the report; "" where it did not run."""
    if not robust:
        return ""
    ablation = pd.DataFrame(robust["ablation"])
    ablation["PLS [CI] (n)"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n})" for e, lo, hi, n in
                                zip(ablation.estimate, ablation.ci_low, ablation.ci_high, ablation.n)]
    table = ablation.pivot(index="condition", columns="tier", values="PLS [CI] (n)").reset_index()
    flips = pd.DataFrame(robust["attack_flips"]).drop(columns=["category"])
    mitig = pd.DataFrame(robust.get("mitigation", []))
    mitig_html = ""
    if len(mitig):
        mitig["cell"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n})" for e, lo, hi, n in
                         zip(mitig.estimate, mitig.ci_low, mitig.ci_high, mitig.n)]
        wide = mitig.pivot(index="condition", columns=["metric", "tier"], values="cell")
        wide = wide.reindex([c for c in MITIGATION_ORDER if c in wide.index])
        wide.columns = [f"{'PLS' if m == 'pls' else 'Error Bias'}: {t}" for m, t in wide.columns]
        img = (copy_images(robust.get("plots", {}), Path(robust["dir"]), out_dir, "robustness_")
               if robust.get("dir") else "")
        mitig_html = ("<h2>Leakage mitigations</h2><p>Every judge on the same held-out half of the prompts (the "
                      "other half calibrates): plain; prompting (the judge told, before each question, that "
                      "the answers may come from models related to it); chain of thought (the judge first writes its reasoning on the "
                      "pair, then decides with it in context); paraphrase (every response rewritten, by the "
                      "configured rewriter model or, without one, by rule: style, format and wording at once); "
                      "automatic calibration (each judge's own offset per head-to-head, learned on the other "
                      "half, replaced by the judges' consensus); contextual calibration (the judge's verdict on "
                      "a content-free input divided out). PLS as in the audit; Error Bias = the related judge's "
                      "score for its own student minus the unrelated judges' plain score on the same comparison "
                      "(errors in its favour minus errors against it), n prompts.</p>"
                      + html_table(wide.reset_index()) + img)
    lc_html = ""
    if robust.get("controlled_win_rates"):
        lc = pd.DataFrame(robust["controlled_win_rates"])
        lc["length slope [CI]"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n} prompts)" for e, lo, hi, n in
                                   zip(lc.length_slope, lc.ci_low, lc.ci_high, lc.n_prompts)]
        lc_html = ("<h2>Length- and style-controlled win rates</h2><p>Per judge, a logistic GLM of the "
                   "verdicts on each cell plus tanh-scaled length (and style) differences, after AlpacaEval's "
                   "length-controlled win rate; the controlled win rate is the cell's term alone. Per-cell "
                   "estimates with CIs in data/robustness/controlled_win_rates.parquet. A positive length "
                   "slope: the judge prefers the longer response, whatever the cell.</p>"
                   + html_table(lc.pivot(index="judge", columns="control", values="length slope [CI]").reset_index()))
        if robust.get("length_gameability"):
            moved = pd.DataFrame(robust["length_gameability"])
            moved["mean |Δ win rate| [CI] (n cells)"] = [
                f"{e:.3f} [{lo:.3f}, {hi:.3f}] (n={n})" for e, lo, hi, n in
                zip(moved.mean_abs_change, moved.ci_low, moved.ci_high, moved.n)]
            lc_html += ("<p>Gameability: how far each kind of win rate moves when the second response of "
                        "a random half of the pairs is lengthened (the length attack), per judge; a debiased "
                        "win rate should move less.</p>"
                        + html_table(moved.pivot(index="judge", columns="control",
                                                 values="mean |Δ win rate| [CI] (n cells)").reset_index()))
    rec_html = ""
    if robust.get("recognition"):
        judges = pd.DataFrame(robust["recognition"]["judges"])
        clf = pd.DataFrame(robust["recognition"]["classifier"])
        for frame in (judges, clf):
            frame["accuracy [CI] (n)"] = with_ci(frame.accuracy, frame, ".3f")
        rec_html = ("<h2>Recognition: can the leakage be seen?</h2><p>Each related judge asked which of two "
                    "responses (its related generator's student and another generator's, same base, method and "
                    "prompt) came from a model trained on its own answers; both orders averaged, chance 0.5 "
                    "(the study: 41-53%). mean_p_related: the judge's average probability for the right one.</p>"
                    + html_table(judges[["judge", "tier", "accuracy [CI] (n)", "n_prompts", "p_value", "mean_p_related"]])
                    + "<p>A logistic head on the frozen encoder's embeddings of the students' responses, trained "
                    "on one half of the prompts and tested on the other, naming the generator whose data each "
                    "student learnt from (chance 1 / generators; the study's BERT classifier: 82.4%).</p>"
                    + html_table(clf[["scope", "group", "accuracy [CI] (n)", "n_prompts", "chance", "n_train"]]))
    return ("<h2>Spurious-feature ablation</h2><p>PLS by tier (all methods) on the original "
            "responses and after removing house-style phrases, markdown format, or wording "
            "(synonym swaps) from every student response.</p>" + html_table(table)
            + "<h2>Presentation attacks</h2><p>Share of each judge's verdicts that flip when the "
            "response it made lose is lengthened, made enthusiastic, given an irrelevant "
            "paragraph, or made to carry a prompt injection (an instruction to the judge, or a "
            "forged verdict for itself); per question category in "
            "data/robustness/attack_flips.parquet.</p>"
            + html_table(flips) + mitig_html + lc_html + rec_html)
