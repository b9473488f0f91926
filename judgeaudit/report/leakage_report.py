"""The Preference Leakage report: HTML with tables and plots, and a JSON of every figure."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.dispatch import SETTINGS  # noqa: E402
from judgeaudit.report.machine import machine  # noqa: E402
from judgeaudit.tables import write_json  # noqa: E402

TIER_ORDER = ["same", "inheritance", "same_family"]


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, float_format=lambda x: f"{x:.3f}", border=0, classes="t")


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


def _prefix_section(prefix: dict | None, out_dir: Path) -> str:
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
    if "fingerprint" in rows:
        rows["fingerprint"] = [f"{f:.3f} [{lo:.3f}, {hi:.3f}]" if f == f else "" for f, lo, hi in
                               zip(rows.fingerprint, rows.fingerprint_ci_low, rows.fingerprint_ci_high)]
    table = rows[["source", "base", "variant", "trained_group", "group", "omega_bar", "alpha_bar", "accuracy",
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
            f"Accuracy on unprefixed test pairs with a 95% CI.</p><ul>{notes}</ul>" + _fmt(table)
            + "<h3>Across bases: alpha-bar</h3>" + _fmt(cross)
            + f'<img src="{models.name}" alt="alpha-bar per base"><h3>Matrices of the main base ('
            + f'{summary["main_base"]})</h3><img src="{heat.name}" alt="prefix bias heatmaps">')


def _robustness_section(robust: dict | None, out_dir: Path) -> str:
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
        img = (_copy_images(robust.get("plots", {}), Path(robust["dir"]), out_dir, "robustness_")
               if robust.get("dir") else "")
        mitig_html = ("<h2>Leakage mitigations</h2><p>Every judge on the same held-out half of the prompts (the "
                      "other half calibrates): plain; chain of thought (the judge first writes its reasoning on the "
                      "pair, then decides with it in context); paraphrase (every response rewritten, by the "
                      "configured rewriter model or, without one, by rule: style, format and wording at once); "
                      "automatic calibration (each judge's own offset per head-to-head, learned on the other "
                      "half, replaced by the judges' consensus); contextual calibration (the judge's verdict on "
                      "a content-free input divided out). PLS as in the audit; Error Bias = the related judge's "
                      "score for its own student minus the unrelated judges' plain score on the same comparison "
                      "(errors in its favour minus errors against it), n prompts.</p>"
                      + _fmt(wide.reset_index()) + img)
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
                   + _fmt(lc.pivot(index="judge", columns="control", values="length slope [CI]").reset_index()))
        if robust.get("length_gameability"):
            moved = pd.DataFrame(robust["length_gameability"])
            moved["mean |Δ win rate| [CI] (n cells)"] = [
                f"{e:.3f} [{lo:.3f}, {hi:.3f}] (n={n})" for e, lo, hi, n in
                zip(moved.mean_abs_change, moved.ci_low, moved.ci_high, moved.n)]
            lc_html += ("<p>Gameability: how far each kind of win rate moves when the second response of "
                        "a random half of the pairs is lengthened (the length attack), per judge; a debiased "
                        "win rate should move less.</p>"
                        + _fmt(moved.pivot(index="judge", columns="control",
                                           values="mean |Δ win rate| [CI] (n cells)").reset_index()))
    rec_html = ""
    if robust.get("recognition"):
        judges = pd.DataFrame(robust["recognition"]["judges"])
        clf = pd.DataFrame(robust["recognition"]["classifier"])
        for frame in (judges, clf):
            frame["accuracy [CI] (n)"] = _with_ci(frame.accuracy, frame, ".3f")
        rec_html = ("<h2>Recognition: can the leakage be seen?</h2><p>Each related judge asked which of two "
                    "responses (its related generator's student and another generator's, same base, method and "
                    "prompt) came from a model trained on its own answers; both orders averaged, chance 0.5 "
                    "(the study: 41-53%). mean_p_related: the judge's average probability for the right one.</p>"
                    + _fmt(judges[["judge", "tier", "accuracy [CI] (n)", "n_prompts", "p_value", "mean_p_related"]])
                    + "<p>A logistic head on the frozen encoder's embeddings of the students' responses, trained "
                    "on one half of the prompts and tested on the other, naming the generator whose data each "
                    "student learnt from (chance 1 / generators; the study's BERT classifier: 82.4%).</p>"
                    + _fmt(clf[["scope", "group", "accuracy [CI] (n)", "n_prompts", "chance", "n_train"]]))
    return ("<h2>Spurious-feature ablation</h2><p>PLS by tier (all methods) on the original "
            "responses and after removing house-style phrases, markdown format, or wording "
            "(synonym swaps) from every student response.</p>" + _fmt(table)
            + "<h2>Presentation attacks</h2><p>Share of each judge's verdicts that flip when the "
            "response it made lose is lengthened, made enthusiastic, given an irrelevant "
            "paragraph, or made to carry a prompt injection (an instruction to the judge, or a "
            "forged verdict for itself); per question category in "
            "data/robustness/attack_flips.parquet.</p>"
            + _fmt(flips) + mitig_html + lc_html + rec_html)


def _r2(value: float | None) -> str:
    return "n/a (every point equal)" if value is None else f"{value:.2f}"


def _with_ci(values: pd.Series, frame: pd.DataFrame, spec: str) -> list[str]:
    """"estimate [ci_low, ci_high] (n=...)" per row of ``frame``."""
    return [f"{e:{spec}} [{lo:{spec}}, {hi:{spec}}] (n={n})"
            for e, lo, hi, n in zip(values, frame.ci_low, frame.ci_high, frame.n)]


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
                      f"{fit['slope_ci_high'] * scale:+.3f}], R² {_r2(fit['r2'])}")
        ax.axhline(0, color="grey", lw=0.6, ls=":")
        ax.set_xlabel(label)
        ax.set_ylabel(f"PLS ({studies['tier']} tier, 95% CI)")
        ax.legend(fontsize=7)
    return _save(fig, path)


MITIGATION_ORDER = ["plain", "chain-of-thought", "paraphrase", "automatic-calibration", "contextual-calibration"]


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
    return _save(fig, path)


def _points(points: list[dict], keys: list[str]) -> pd.DataFrame:
    """A study's points as its keys and "PLS [CI] (n)", in the order studied."""
    frame = pd.DataFrame(points)
    table = frame[keys].copy()
    if "n_parameters" in table:
        table["n_parameters"] = table["n_parameters"].astype("int64")
    table["PLS [95% CI] (n prompts)"] = _with_ci(frame.estimate, frame, "+.3f")
    return table


def _studies_section(studies: dict | None, out_dir: Path) -> str:
    if not studies or "mixing" not in studies:
        return ""
    png = plot_leakage_studies(studies, out_dir / "leakage_studies.png")
    mix, scale = studies["mixing"], studies["scale"]
    fit = {k: studies[k]["fit"] for k in ("mixing", "scale")}
    return (f"<h2>Data mixing and model scale</h2><p>SFT students of their own, scored by the "
            f"{studies['tier']}-tier judges ({', '.join(studies['judges'])}). Mixing: {studies['mixing_student']} "
            "trained on each generator's answers for a share of the training prompts and neutral answers (the "
            "reference answer in a random house style) for the rest; the study: even 10% leaks and PLS grows "
            f"linearly. Slope {fit['mixing']['slope']:+.3f} [{fit['mixing']['slope_ci_low']:+.3f}, "
            f"{fit['mixing']['slope_ci_high']:+.3f}] per unit share, R² {_r2(fit['mixing']['r2'])}; the lowest share "
            f"({fit['mixing']['lowest_share']:g}) {'leaks' if fit['mixing']['lowest_share_leaks'] else 'shows no leakage'} "
            "(CI above zero or not). Scale: student bases of several sizes, each trained at share "
            f"{fit['scale'].get('share', 1):g}; the study: smaller students leak more. Slope {fit['scale']['slope_per_million']:+.4f} per million parameters, R² "
            f"{_r2(fit['scale']['r2'])}.</p>" + _fmt(_points(mix["points"], ["share"]))
            + _fmt(_points(scale["points"], ["student_base", "n_parameters"]))
            + f"<img src='{png.name}' alt='leakage studies'>")


def _task_type_section(summary: dict) -> str:
    by_type = summary.get("pls_by_task_type")
    if not by_type:
        return ""
    table = pd.DataFrame([{"task type": k.split("/")[0], "tier": k.split("/")[1], **v} for k, v in by_type.items()])
    table["PLS [CI] (n)"] = _with_ci(table.estimate, table, "+.3f")
    table = table.pivot(index="tier", columns="task type", values="PLS [CI] (n)").reset_index()
    return ("<h2>PLS by task type</h2><p>Objective prompts have a checkable answer (arithmetic, capitals...); "
            "subjective ones are open (describe, suggest, opinion), where style is free. The study: subjective "
            "tasks leak more. Per category in data/metrics/pls_by_task.parquet.</p>" + _fmt(table))


def _copy_images(names: dict[str, str], src: Path, out_dir: Path, prefix: str) -> str:
    """Copy a stage's plots next to the report; their <img> tags."""
    import shutil

    tags = []
    for key, name in names.items():
        if (src / name).exists():
            shutil.copy(src / name, out_dir / f"{prefix}{name}")
            tags.append(f'<img src="{prefix}{name}" alt="{key}">')
    return "".join(tags)


def _pu_section(pu: dict | None, out_dir: Path) -> str:
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
            + _fmt(cons[[c for c in cols if c in cons]])
            + "<h3>Attack flip rates</h3>" + _fmt(pd.DataFrame(pu["attack_flip_rates"])))
    if pu.get("sensitivity"):
        sens = pd.DataFrame(pu["sensitivity"]).assign(gain=lambda d: d.cons_adj - d.cons_orig)
        grid = sens.pivot_table(index=["condition", "p_ratio"], columns="m_scale", values="gain").round(3)
        grid.columns = [f"gain, m x {m:g}" for m in grid.columns]
        text += ("<h3>Sensitivity: share verified (p_ratio) x transport fraction (m scale)</h3><p>Mean over "
                 "judges of Cons_adj - Cons_orig.</p>" + _fmt(grid.reset_index()))
    if pu.get("encoders"):
        enc = pd.DataFrame(pu["encoders"])
        orig = enc.groupby(["judge", "condition"], sort=False)["cons_orig"].first().rename("cons_orig")
        enc = pd.concat([orig, enc.pivot_table(index=["judge", "condition"], columns="encoder", values="cons_adj",
                                               sort=False)], axis=1).round(3)
        text += ("<h3>Encoder comparison</h3><p>Cons_adj (all question types) with each encoder F(x, o) on the "
                 "same verdicts: the shipped MiniLM (mean pooling) against a decoder read at its last token, "
                 "as a reward model reads a response.</p>" + _fmt(enc.reset_index()))
    if pu.get("plots") and pu.get("dir"):
        text += _copy_images(pu["plots"], Path(pu["dir"]), out_dir, "pu_")
    return text


def _boat_section(boat: dict | None, out_dir: Path) -> str:
    if not boat or "clean" not in boat:
        return ""
    sources = "".join(f"<li>{k}: {v}</li>" for k, v in boat.get("sources", {}).items())
    single = pd.DataFrame(boat.get("single", []))
    single_html = ""
    if len(single):
        single_html = ("<h3>Each intervention alone</h3><p>Accuracy with the one intervention applied to every "
                       "item (answer removal together with its hint), and its change from vanilla, paired over "
                       "items (95% CIs, n items).</p>"
                       + _fmt(single[["benchmark", "model", "intervention", "accuracy", "ci_low", "ci_high",
                                      "delta", "delta_ci_low", "delta_ci_high", "n"]]))
    return ("<h2>Contamination check (BOAT)</h2><p>Accuracy on multiple-choice items, plain "
            "(vanilla) and under bags of atomic interventions (BOAT), for the clean model and "
            "after fine-tuning it on the test items of every benchmark. A large vanilla - BOAT gap "
            f"flags memorised answers.</p><ul>{sources}</ul>" + _fmt(boat_table(boat))
            + "<h3>BOAT accuracy per intervention (within bags)</h3>" + _fmt(boat_interventions(boat))
            + single_html
            + _probe_section(boat.get("probe"), out_dir))


def plot_probe(probe: dict, path: Path) -> Path:
    """Against rewriting strength: the share of items whose recorded label is wrong, the
    judges' consensus over-confidence, and each agent's self-preference gap (95% CIs)."""
    rew, rates = pd.DataFrame(probe["rewriters"]), pd.DataFrame(probe["rates"])
    cons = rates[rates.judge == "consensus"]
    selfp = pd.DataFrame(probe["self_preference"])
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    panels = ((axes[0], rew, "label_error", "recorded label wrong"),
              (axes[1], cons, "over_confidence", "consensus says holds | broken"))
    for ax, frame, col, ylabel in panels:
        for name, g in frame.groupby("rewriter", sort=False):
            ax.errorbar(g.strength, g[col], yerr=[g[col] - g[f"{col}_ci_low"], g[f"{col}_ci_high"] - g[col]],
                        fmt="o-", capsize=3, label=name)
        ax.set_xlabel("rewriting strength")
        ax.set_ylabel(f"{ylabel} (95% CI)")
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=7)
    if len(selfp):
        for (agent, other), g in selfp[selfp.reference == "truth"].groupby(["agent", "other"], sort=False):
            axes[2].errorbar(g.strength, g.gap, yerr=[g.gap - g.gap_ci_low, g.gap_ci_high - g.gap], fmt="o-",
                             capsize=3, label=f"{agent} vs {other}")
        axes[2].axhline(0, color="grey", lw=0.6, ls=":")
        axes[2].legend(fontsize=7)
    axes[2].set_xlabel("rewriting strength")
    axes[2].set_ylabel("self-preference: own - other's (95% CI)")
    return _save(fig, path)


def _probe_section(probe: dict | None, out_dir: Path) -> str:
    if not probe or "rewriters" not in probe:
        return ""
    png = plot_probe(probe, out_dir / "boat_probe.png")
    rates = pd.DataFrame(probe["rates"])
    cols = ["rewriter", "strength", "judge"] + [f"{m}{x}" for m in ("over_confidence", "under_confidence", "error")
                                                 for x in ("", "_ci_low", "_ci_high", "_n")]
    return ("<h3>Agents-as-evaluator probe, and the same on BOAT</h3><p>Items rewritten by a rule (key entity "
            "swapped with probability s), by each agent "
            f"({', '.join(probe['agents']) or 'none configured'}; mode {probe['mode']}: a share s of the words "
            "re-sampled by the agent, or a prompted rephrase) and by BOAT (bags with the paper's probabilities "
            f"x s), {probe['n_items']} items per cell. Label moved: the original label no longer answers the "
            "item; label error: the label the rewriter records is wrong (an agents pipeline keeps the original "
            "label; BOAT moves it, checked from the option texts). Each judge rates (1-10) whether the original "
            "label still holds (&ge; 6: holds). Over-confidence: says holds where the other judges' majority "
            "says broken; under-confidence: says broken where it says holds; error: against the truth. "
            "Consensus row: all judges' majority against the truth (its error is the consensus error). "
            "Self-preference: an agent's over-confidence on its own broken rewrites minus on another agent's, "
            "broken by consensus or by truth.</p>"
            + f"<img src='{png.name}' alt='agents-as-evaluator probe'>"
            + _fmt(pd.DataFrame(probe["rewriters"])) + _fmt(pd.DataFrame(probe["self_preference"]))
            + _fmt(rates[[c for c in cols if c in rates]]))


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


BOAT_MODELS = ("clean", "contaminated")


def _boat_benchmarks(boat: dict) -> dict[str, dict]:
    """{benchmark: {model: summary}}: the generated items, then each real benchmark."""
    return {"generated": {m: boat[m] for m in BOAT_MODELS if m in boat}, **boat.get("real", {})}


def boat_table(boat: dict) -> pd.DataFrame:
    """Vanilla vs BOAT accuracy per benchmark and model: mean +- std over runs, CI over
    items, n items."""
    rows = []
    for bench, models in _boat_benchmarks(boat).items():
        for model, s in models.items():
            row = {"benchmark": bench, "model": model}
            for key in ("vanilla", "boat"):
                f = s[key]
                row[key] = (f"{f['accuracy']:.3f} ± {f['std']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] "
                            f"(n={f['n']}, runs={s['runs']})")
            row.update(s["confusion"])
            rows.append(row)
    return pd.DataFrame(rows)


def boat_interventions(boat: dict) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": b, "model": m, "intervention": k, "boat_accuracy": v["accuracy"],
                          "ci_low": v["ci_low"], "ci_high": v["ci_high"], "n": v["n"],
                          "n_items": v["n_items"]}
                         for b, models in _boat_benchmarks(boat).items() for m, s in models.items()
                         for k, v in s["per_intervention"].items()])


def _reproducible(made_on: dict) -> str:
    """How far the tables' bits carry, by the run's ``cpu_dispatch`` (judgeaudit/dispatch.py): the
    cross-vendor claim holds for the whole setting only, not for MKL's branch set by hand alone."""
    if made_on.get("cpu_dispatch") == SETTINGS["compatible"]:
        return ("cpu_dispatch compatible (AVX2, MKL's cross-vendor branch): the bootstrap stage's models "
                "came out bit-equal on an Intel and an AMD CPU under it")
    return ("the tables are bitwise reproducible on one kind of CPU, not across CPUs "
            "(params.yaml's cpu_dispatch)")


def _consistency(figure: dict) -> str:
    """The position consistency with its CI and n."""
    return (f"{figure['estimate']:.3f} [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}] "
            f"(n={figure['n']} verdict pairs over {figure['n_prompts']} prompts)")


def _score_range_section(score_range: dict | None, out_dir: Path) -> str:
    if not score_range:
        return ""
    from judgeaudit.report.score_range_report import FAVOURED_NOTE, correlation_grid, favoured_table

    imgs = _copy_images({"scores given per range": "histograms.png", "lambda x t grid": "grid.png"},
                        Path(score_range["dir"]), out_dir, "score_range_") if score_range.get("dir") else ""
    return ("<h2>Score-range bias and contrastive decoding</h2><p>Pointwise judges score the same graded "
            "answers under each range; correlation with the reference scores (95% bootstrap CIs, n answers "
            "in the test split), greedy vs contrastive decoding with a smaller same-family assistant.</p>"
            + _fmt(correlation_grid(score_range["correlations"]))
            + f"<h3>Does the assistant share the bias?</h3><p>{FAVOURED_NOTE}</p>"
            + _fmt(favoured_table(score_range["summary"])) + imgs)


def write_report(wr: pd.DataFrame, pls: pd.DataFrame, summary: dict, responses: pd.DataFrame,
                 out_dir: Path, boat: dict | None = None, pu: dict | None = None,
                 prefix: dict | None = None, robustness: dict | None = None,
                 score_range: dict | None = None, judges: dict | None = None,
                 leaderboard: dict | None = None, studies: dict | None = None) -> dict[str, Path]:
    """Write report.html, report.json and the plots into ``out_dir``, with the data of the plots
    dvc.yaml declares under ``out_dir/plots``. ``judges``: the real judges' leaderboard (card,
    reproduction, pu, headline, notes, comparison, strategies), shown first."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made_on = machine()
    judges_html = ""
    if judges is not None:
        from judgeaudit.report.judge_report import leaderboard_section

        judges_html = leaderboard_section(judges, out_dir)
    leaderboard_html = ""
    if leaderboard is not None:
        from judgeaudit.report.leaderboard_report import leaderboard_section

        leaderboard_html = leaderboard_section(leaderboard["board"], leaderboard["summary"], out_dir,
                                               leaderboard.get("dir"))
    prefix_html = _prefix_section(prefix, out_dir)
    pls_png = plot_pls(pls, out_dir / "pls_by_tier.png")
    write_json(pls_plot_data(pls).to_dict("records"), out_dir / "plots" / "pls_by_tier.json")
    wr_png = plot_win_rates(wr, out_dir / "win_rates.png")
    pairs = pls[pls.scope == "pair"][["tier", "method", "student_base", "generator_i", "generator_j",
                                      "judge_i", "judge_j", "wr_ii", "wr_ij", "estimate", "ci_low",
                                      "ci_high", "n"]]
    samples = responses.groupby("student_id").head(1)[["student_id", "prompt", "response"]].head(24)
    body = f"""<!doctype html><html><head><meta charset="utf-8"><title>judgeaudit: preference leakage</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}} table.t{{border-collapse:collapse;font-size:12px}}
table.t td,table.t th{{padding:2px 6px;border-bottom:1px solid #ddd}}
.ok{{color:#17662a;font-weight:bold}} .care{{color:#8a5a00;font-weight:bold}} .bad{{color:#a11;font-weight:bold}}
img{{max-width:100%}}</style></head><body>
<h1>judgeaudit report</h1>
{judges_html}
{leaderboard_html}
<h1>Preference leakage audit (embedded experiment)</h1>
<p>Seed {summary['seed']}; {summary['n_judgments']} judgments; bootstrap {summary['n_boot']} resamples over
eval prompts, {int(summary['confidence'] * 100)}% percentile CIs; n = number of eval prompts per figure.
Position consistency of verdicts across the two presentation orders:
{_consistency(summary['position_consistency'])}.
Computed on {html.escape(made_on['cpu'])} ({made_on['cores']} cores, {made_on['simd']}; scoring passes in {made_on['precision']}; accelerator: {made_on['accelerator'] or 'none'}),
torch {made_on['packages']['torch']}: {_reproducible(made_on)}.</p>
<p>PLS &gt; 0 means judges favour the students of the generator they are related to.</p>
<h2>PLS by association tier</h2>{_fmt(summary_table(pls))}
<img src="{pls_png.name}" alt="PLS by tier">
{_task_type_section(summary)}
{_studies_section(studies, out_dir)}
<h2>Win rates</h2><img src="{wr_png.name}" alt="win rates">
<h2>PLS per generator pair</h2>{_fmt(pairs)}
<h2>Win rates per judge</h2>{_fmt(wr.drop(columns=["metric", "confidence"]))}
{_robustness_section(robustness, out_dir)}
{_boat_section(boat, out_dir)}
{_pu_section(pu, out_dir)}
{prefix_html}
{_score_range_section(score_range, out_dir)}
<h2>Sample responses</h2>{_fmt(samples.map(lambda s: str(s)[:160]))}
</body></html>"""
    (out_dir / "report.html").write_text(body)
    figures = {"machine": made_on, "summary": summary, "pls": pls.to_dict("records"), "win_rates": wr.to_dict("records"),
               "boat": boat or {}, "pu": pu or {}, "robustness": robustness or {},
               "prefix": {"summary": prefix["summary"], "matrices": prefix["matrices"].to_dict("records")}
               if prefix else {},
               "real_judges": {"headline": judges["headline"].to_dict("records"), "notes": judges["notes"],
                               "comparison": judges.get("comparison", pd.DataFrame()).to_dict("records"),
                               "strategies": judges.get("strategies", pd.DataFrame()).to_dict("records"),
                               "juries": judges["juries"]["summary"] if judges.get("juries") else [],
                               "error_correlation": judges.get("errors", pd.DataFrame()).to_dict("records"),
                               "alt_test": judges.get("alt_test", pd.DataFrame()).to_dict("records"),
                               "selective": judges.get("selective", pd.DataFrame()).to_dict("records")}
               if judges else {},
               "score_range": {"summary": score_range["summary"],
                               "correlations": score_range["correlations"].to_dict("records")}
               if score_range else {}}
    write_json(figures, out_dir / "report.json")
    return {"html": out_dir / "report.html", "json": out_dir / "report.json", "pls_png": pls_png,
            "win_rates_png": wr_png}
