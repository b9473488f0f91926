"""The contamination check (BOAT): vanilla against intervened accuracy per benchmark and model,
per intervention, and the agents-as-evaluator probe."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import html_table  # noqa: E402
from judgeaudit.report.plots import save_tight  # noqa: E402


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


def boat_section(boat: dict | None, out_dir: Path) -> str:
    """The contamination check's HTML (the probe's plot written into ``out_dir``); "" without BOAT results."""
    if not boat or "clean" not in boat:
        return ""
    sources = "".join(f"<li>{k}: {v}</li>" for k, v in boat.get("sources", {}).items())
    single = pd.DataFrame(boat.get("single", []))
    single_html = ""
    if len(single):
        single_html = ("<h3>Each intervention alone</h3><p>Accuracy with the one intervention applied to every "
                       "item (answer removal together with its hint), and its change from the un-intervened MCQ "
                       "scored the same way (on GSM8K not the generated vanilla), paired over "
                       "items (95% CIs, n items).</p>"
                       + html_table(single[["benchmark", "model", "intervention", "accuracy", "ci_low", "ci_high",
                                            "delta", "delta_ci_low", "delta_ci_high", "n"]]))
    return ("<h2>Contamination check (BOAT)</h2><p>Accuracy on multiple-choice items, plain "
            "(vanilla) and under bags of atomic interventions (BOAT), for the clean model and "
            "after fine-tuning it on the test items of every benchmark. A large vanilla - BOAT gap "
            f"flags memorised answers.</p><ul>{sources}</ul>" + html_table(boat_table(boat))
            + "<h3>BOAT accuracy per intervention (within bags)</h3>" + html_table(boat_interventions(boat))
            + single_html
            + probe_section(boat.get("probe"), out_dir))


def plot_probe(probe: dict, path: Path) -> Path:
    """Against rewriting strength: the share of items whose recorded label is wrong, the
    judges' consensus over-confidence, and each agent's self-preference gap (95% CIs)."""
    rew, rates = pd.DataFrame(probe["rewriters"]), pd.DataFrame(probe["rates"])
    cons = rates[rates.judge == "consensus"]
    paper = "consensus_error" in cons
    ccol, clabel = ("consensus_error", "consensus <= 5 (wrong)") if paper else ("over_confidence",
                                                                              "consensus says holds | broken")
    selfp = pd.DataFrame(probe["self_preference"])
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    panels = ((axes[0], rew, "label_error", "recorded label wrong"),
              (axes[1], cons, ccol, clabel))
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
    return save_tight(fig, path)


def probe_section(probe: dict | None, out_dir: Path) -> str:
    """The agents-as-evaluator probe's HTML and plot; "" where the probe did not run."""
    if not probe or "rewriters" not in probe:
        return ""
    png = plot_probe(probe, out_dir / "boat_probe.png")
    rates = pd.DataFrame(probe["rates"])
    cols = ["rewriter", "strength", "judge"] + [f"{m}{x}" for m in ("over_confidence", "under_confidence", "error",
                                                                    "consensus_error", "truth_error")
                                                 for x in ("", "_ci_low", "_ci_high", "_n")]
    rule = probe.get("rule", "majority")
    reading = ("Each judge scores (1-10) whether the original label still holds; a judge's reference is the mean "
               "of the OTHER judges' scores (&le; 5: wrong, &ge; 6: right; the paper's rule). Over-confidence: "
               "scores &ge; 6 where that mean is &le; 5; under-confidence: &le; 5 where it is &ge; 6 (judges: "
               "pooled, CI over items). Consensus error: the share of items whose mean score over all judges is "
               "&le; 5 (the data bias); truth error (ours): the consensus verdict against the known truth."
               if rule == "paper" else
               "Each judge rates (1-10) whether the original label still holds (&ge; 6: holds). Over-confidence: "
               "says holds where the other judges' majority says broken; under-confidence: the reverse; error: "
               "against the truth. Consensus row: all judges' majority against the truth (rule majority, ours).")
    t1 = probe.get("table1") or {}
    t1_html = ""
    if t1.get("subjects"):
        r = "undefined" if t1.get("r") is None else f"{t1['r']:.3f} [{t1['ci_low']:.3f}, {t1['ci_high']:.3f}]"
        t1_html = (f"<h4>Data bias against accuracy per subject (the paper's Table 1)</h4><p>Pearson r over "
                   f"{t1['n']} categories: {r}.</p>" + html_table(pd.DataFrame(t1["subjects"])))
    return ("<h3>Agents-as-evaluator probe, and the same on BOAT</h3><p>Items rewritten by a rule (key entity "
            "swapped with probability s), by each agent "
            f"({', '.join(probe['agents']) or 'none configured'}; mode {probe['mode']}: a share s of the words "
            "re-sampled by the agent, or a prompted rephrase) and by BOAT (bags with the paper's probabilities "
            f"x s; strength as {probe.get('strength_as', 'share')}), {probe['n_items']} items per cell. Label "
            "moved: the original label no longer answers the item; label error: the label the rewriter records "
            "is wrong (an agents pipeline keeps the original label; BOAT moves it, checked from the option "
            f"texts). {reading} Self-preference: an agent's over-confidence on its own broken rewrites minus on "
            "another agent's, broken by consensus or by truth.</p>"
            + f"<img src='{png.name}' alt='agents-as-evaluator probe'>"
            + html_table(pd.DataFrame(probe["rewriters"])) + html_table(pd.DataFrame(probe["self_preference"]))
            + html_table(rates[[c for c in cols if c in rates]]) + t1_html)
