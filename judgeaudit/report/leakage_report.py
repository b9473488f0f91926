"""The Preference Leakage report: HTML with tables and plots, and a JSON of every figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.tables import write_json  # noqa: E402

TIER_ORDER = ["same", "inheritance", "same_family"]


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, float_format=lambda x: f"{x:.3f}", border=0, classes="t")


def plot_prefix_heatmaps(matrices: pd.DataFrame, path: Path) -> Path:
    """omega and alpha matrices, one panel per (variant, group, kind)."""
    panels = list(matrices.groupby(["variant", "group", "kind"], sort=True))
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, ((variant, group, kind), m) in zip(axes.flat, panels):
        labels = list(dict.fromkeys(m.p1))
        grid = m.pivot(index="p1", columns="p2", values="estimate").reindex(index=labels, columns=labels)
        im = ax.imshow(grid.to_numpy(), cmap="RdBu_r", vmin=-0.3, vmax=0.3)
        names = [p.strip() or "(none)" for p in labels]
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=6)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        for (r, c), v in np.ndenumerate(grid.to_numpy()):
            ax.text(c, r, f"{v:+.2f}", ha="center", va="center", fontsize=6)
        ax.set_title(f"{variant} / {group} / {kind}", fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _prefix_section(prefix: dict | None, out_dir: Path) -> str:
    if not prefix:
        return ""
    png = plot_prefix_heatmaps(prefix["matrices"], out_dir / "prefix_bias.png")
    rows = []
    for variant, entry in prefix["summary"].items():
        for group, figs in entry.items():
            if isinstance(figs, dict):
                rows.append({"variant": variant, "audited group": group, **figs,
                             "accuracy": entry["accuracy"], "accuracy_ratio": entry["accuracy_ratio"],
                             "n_test": entry["n_test"]})
    return ("<h2>Reward-model prefix bias</h2><p>omega-bar: mean |w(p1,p2) - 0.5| (auto-influence); "
            "alpha-bar: mean |acc(p1 on chosen, p2 on rejected) - acc(no prefix)| (cross-influence), "
            "over distinct prefixes; per-cell CIs in report.json. aug: trained with 3 random prefix "
            "pairs per item; aug-gen: augmented with one group's prefixes, audited on the others.</p>"
            + _fmt(pd.DataFrame(rows)) + f'<img src="{png.name}" alt="prefix bias heatmaps">')


def _robustness_section(robust: dict | None) -> str:
    if not robust:
        return ""
    ablation = pd.DataFrame(robust["ablation"])
    ablation["PLS [CI] (n)"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n})" for e, lo, hi, n in
                                zip(ablation.estimate, ablation.ci_low, ablation.ci_high, ablation.n)]
    table = ablation.pivot(index="condition", columns="tier", values="PLS [CI] (n)").reset_index()
    flips = pd.DataFrame(robust["attack_flips"]).drop(columns=["category"])
    calib = pd.DataFrame(robust.get("calibration", []))
    calib_html = ""
    if len(calib):
        calib["PLS [CI] (n)"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] (n={n})" for e, lo, hi, n in
                                 zip(calib.estimate, calib.ci_low, calib.ci_high, calib.n)]
        calib_html = ("<h2>Contextual calibration</h2><p>PLS on held-out prompts before and after "
                      "removing each judge's own offset (estimated on the other half of the prompts) "
                      "and restoring the judges' consensus.</p>"
                      + _fmt(calib.pivot(index="condition", columns="tier", values="PLS [CI] (n)").reset_index()))
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
            + _fmt(flips) + calib_html + lc_html + rec_html)


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
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


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
            f"{_r2(fit['scale']['r2'])}.</p>" + _fmt(pd.DataFrame(mix["points"])) + _fmt(pd.DataFrame(scale["points"]))
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


def _pu_section(pu: dict | None) -> str:
    if not pu:
        return ""
    cols = ["judge", "condition", "n_pairs", "cons_orig", "cons_orig_std", "cons_orig_ci_low",
            "cons_orig_ci_high", "cons_adj", "cons_adj_std", "cons_adj_ci_low", "cons_adj_ci_high",
            "flip_rate"]
    return ("<h2>PU audit of the judges (known-quality pairs)</h2><p>Consistency of each judge "
            "with the known-correct answer before (orig) and after (adj) the partial-OT "
            "adjustment, mean and std over splits, 95% CI over pairs; clean and after each "
            "presentation attack on the response the judge made lose.</p>"
            + _fmt(pd.DataFrame(pu["consistency"])[cols])
            + "<h3>Attack flip rates</h3>" + _fmt(pd.DataFrame(pu["attack_flip_rates"])))


def _boat_section(boat: dict | None) -> str:
    if not boat:
        return ""
    return ("<h2>Contamination check (BOAT)</h2><p>Accuracy on multiple-choice items, plain "
            "(vanilla) and under bags of atomic interventions (BOAT), for the clean model and "
            "after fine-tuning it on the test items. A large vanilla - BOAT gap flags memorised "
            "answers.</p>" + _fmt(boat_table(boat)) + "<h3>BOAT accuracy per intervention</h3>"
            + _fmt(boat_interventions(boat))
            + "<h3>Agents-as-evaluator probe</h3><p>Judges rate (1-10) whether an item's label "
            "still holds after rephrasing; half the rephrasings break it. Over-confidence: rated "
            "&ge; 6 when broken; under-confidence: rated &le; 5 when intact; consensus: the "
            "judges' majority vote.</p>" + _fmt(pd.DataFrame(boat.get("probe", []))))


def plot_pls(pls: pd.DataFrame, path: Path) -> Path:
    """Bar chart: PLS per association tier and method, with CI whiskers."""
    cells = pls[pls.scope == "method"]
    tiers = [t for t in TIER_ORDER if t in set(cells.tier)]
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


def boat_table(boat: dict) -> pd.DataFrame:
    """Vanilla vs BOAT accuracy per model: mean +- std over runs, CI over items, n items."""
    rows = []
    for model, s in boat.items():
        if model == "probe":
            continue
        row = {"model": model}
        for key in ("vanilla", "boat"):
            f = s[key]
            row[key] = (f"{f['accuracy']:.3f} ± {f['std']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] "
                        f"(n={f['n']}, runs={s['runs']})")
        row.update({k: v for k, v in s["confusion"].items()})
        rows.append(row)
    return pd.DataFrame(rows)


def boat_interventions(boat: dict) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "intervention": k, "boat_accuracy": v["accuracy"], "n": v["n"]}
                         for m, s in boat.items() if m != "probe"
                         for k, v in s["per_intervention"].items()])


def _score_range_section(score_range: dict | None, out_dir: Path) -> str:
    if not score_range:
        return ""
    from judgeaudit.report.score_range_report import correlation_grid

    img = ""
    if score_range.get("histograms_png"):
        import shutil

        shutil.copy(score_range["histograms_png"], out_dir / "score_range_histograms.png")
        img = '<img src="score_range_histograms.png" alt="scores given per range">'
    return ("<h2>Score-range bias and contrastive decoding</h2><p>Pointwise judges score the same graded "
            "answers under each range; correlation with the reference scores (95% bootstrap CIs, n answers "
            "in the test split), greedy vs contrastive decoding with a smaller same-family assistant.</p>"
            + _fmt(correlation_grid(score_range["correlations"])) + img)


def write_report(wr: pd.DataFrame, pls: pd.DataFrame, summary: dict, responses: pd.DataFrame,
                 out_dir: Path, boat: dict | None = None, pu: dict | None = None,
                 prefix: dict | None = None, robustness: dict | None = None,
                 score_range: dict | None = None, judges: dict | None = None,
                 leaderboard: dict | None = None, studies: dict | None = None) -> dict[str, Path]:
    """Write report.html, report.json and the plots into ``out_dir``. ``judges``: the real
    judges' leaderboard (card, reproduction, pu, headline, notes), shown first."""
    out_dir.mkdir(parents=True, exist_ok=True)
    judges_html = ""
    if judges is not None:
        from judgeaudit.report.judge_report import leaderboard_section

        judges_html = leaderboard_section(judges["card"], judges["reproduction"], judges["pu"],
                                          judges["headline"], judges["notes"], out_dir)
    leaderboard_html = ""
    if leaderboard is not None:
        from judgeaudit.report.leaderboard_report import leaderboard_section

        leaderboard_html = leaderboard_section(leaderboard["board"], leaderboard["summary"], out_dir,
                                               leaderboard.get("dir"))
    prefix_html = _prefix_section(prefix, out_dir)
    pls_png = plot_pls(pls, out_dir / "pls_by_tier.png")
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
Position consistency of verdicts across the two presentation orders: {summary['position_consistency']:.3f}.</p>
<p>PLS &gt; 0 means judges favour the students of the generator they are related to.</p>
<h2>PLS by association tier</h2>{_fmt(summary_table(pls))}
<img src="{pls_png.name}" alt="PLS by tier">
{_task_type_section(summary)}
{_studies_section(studies, out_dir)}
<h2>Win rates</h2><img src="{wr_png.name}" alt="win rates">
<h2>PLS per generator pair</h2>{_fmt(pairs)}
<h2>Win rates per judge</h2>{_fmt(wr.drop(columns=["metric", "confidence"]))}
{_robustness_section(robustness)}
{_boat_section(boat)}
{_pu_section(pu)}
{prefix_html}
{_score_range_section(score_range, out_dir)}
<h2>Sample responses</h2>{_fmt(samples.map(lambda s: str(s)[:160]))}
</body></html>"""
    (out_dir / "report.html").write_text(body)
    figures = {"summary": summary, "pls": pls.to_dict("records"), "win_rates": wr.to_dict("records"),
               "boat": boat or {}, "pu": pu or {}, "robustness": robustness or {},
               "prefix": {"summary": prefix["summary"], "matrices": prefix["matrices"].to_dict("records")}
               if prefix else {},
               "real_judges": {"headline": judges["headline"].to_dict("records"), "notes": judges["notes"]}
               if judges else {},
               "score_range": {"summary": score_range["summary"],
                               "correlations": score_range["correlations"].to_dict("records")}
               if score_range else {}}
    write_json(figures, out_dir / "report.json")
    return {"html": out_dir / "report.html", "json": out_dir / "report.json", "pls_png": pls_png,
            "win_rates_png": wr_png}
