"""Self-preference of real judges: each judge's rates of the same models beside the other
judges', the gaps with their CIs, and the ranks each judge gives."""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgeaudit.report.format import judge_table  # noqa: E402

Z95 = 1.96


def plot_self_preference(table: pd.DataFrame, gaps: pd.DataFrame, baseline: str, path: Path) -> Path:
    """Rates under each judge (raw, LC; bars: 95% binomial bound; filled: the judge's own
    family) and the leniency-adjusted gaps (log-odds) with their CIs."""
    t = table[table.model != baseline]
    order = t.groupby("model").win_rate.mean().sort_values(ascending=False).index.tolist()
    judges = sorted(t.judge.unique())
    colours = dict(zip(judges, plt.get_cmap("tab10").colors))
    fig, axes = plt.subplots(1, 3, figsize=(18, 5), gridspec_kw={"width_ratios": [1, 1, 0.75]})
    for ax, metric, title in ((axes[0], "win_rate", "raw"), (axes[1], "lc_win_rate", "length-controlled")):
        for i, judge in enumerate(judges):
            rows = t[t.judge == judge].set_index("model").loc[order]
            x = np.arange(len(order)) + (i - (len(judges) - 1) / 2) * 0.22
            own = (rows.family == rows.judge_family).to_numpy()
            ax.errorbar(x, rows[metric], yerr=Z95 * rows[f"{metric}_se_bound"], fmt="none",
                        ecolor=colours[judge], lw=1)
            ax.scatter(x[own], rows[metric][own], color=colours[judge], s=40, label=f"{judge} (own family)")
            ax.scatter(x[~own], rows[metric][~own], facecolors="white", edgecolors=colours[judge], s=40,
                       label=judge)
        ax.set_xticks(range(len(order)), order, rotation=25, ha="right", fontsize=7)
        ax.set_ylabel(f"{title} win rate vs {baseline} (%)")
        ax.set_title(f"{title}: each judge's rate (95% binomial bound)", fontsize=10)
    axes[0].legend(fontsize=6, ncol=2)
    g = gaps.sort_values(["metric", "judge", "model"]).reset_index(drop=True)
    y = np.arange(len(g))
    ax = axes[2]
    ax.errorbar(g.delta_logit, y, xerr=[g.delta_logit - g.delta_logit_ci_low, g.delta_logit_ci_high - g.delta_logit],
                fmt="none", ecolor="grey", capsize=2)
    ax.scatter(g.delta_logit, y, c=np.where(g.relation == "self", "crimson", "steelblue"), s=22, zorder=3)
    ax.set_yticks(y, [f"{r.metric}: {r.judge} on {r.model}" for r in g.itertuples()], fontsize=5.5)
    ax.axvline(0, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("extra log-odds beyond leniency (95% CI)")
    ax.set_title("self (red) and family (blue) preference", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def self_preference_section(summary: dict, out_dir: Path, image_dir: Path | None = None) -> str:
    """The section (HTML) from the tables the stage wrote under ``out_dir``; the plot is
    copied to ``image_dir`` when the page lives elsewhere."""
    sp = summary.get("self_preference")
    if not sp:
        return ""
    gaps = pd.read_parquet(out_dir / "self_preference.parquet")
    ranks = pd.read_parquet(out_dir / "judge_ranks.parquet")
    png = out_dir / "self_preference.png"
    if image_dir is not None and image_dir != out_dir:
        (image_dir / png.name).write_bytes(png.read_bytes())
    wide = ranks.pivot_table(index=["metric", "model"], columns="judge", values="rank").reset_index()
    cols = ["judge", "metric", "model", "relation", "rate_own_judge", "rate_other_judges", "delta_points",
            "delta_points_ci_low", "delta_points_ci_high", "delta_logit", "delta_logit_ci_low",
            "delta_logit_ci_high", "odds_ratio", "rank_own_judge", "rank_other_judges", "rank_shift",
            "rank_shift_ci_low", "rank_shift_ci_high", "n"]
    check = sp.get("bound_check")
    pub = sp.get("published_check")
    lines = [f"<h2>Self-preference of real judges ({html.escape(', '.join(sp['judges']))})</h2>",
             f"<p>The same models' published AlpacaEval 2.0 boards under each judge, against {sp['baseline']}. "
             "delta_points: the judge's win rate for a model of its own family minus the other judges' mean. "
             "delta_logit: the same gap in log-odds after removing the judge's general leniency towards each "
             "other judge, measured on the models neither is related to (odds_ratio = its exp). rank_shift: places "
             "the model gains under its own judge. Aggregates only: CIs come from a parametric bootstrap "
             f"({sp['n_boot']} draws) with each rate redrawn as Binomial(n, rate)/n, the largest variance a mean of "
             "n per-instruction scores in [0, 1] can have; n is what each rate implies where it is a count "
             "(per judge: " + ", ".join(f"{html.escape(j)} {v['min']}-{v['max']}" for j, v in sp["n_by_judge"].items())
             + ").</p>",
             "<p>A judge whose own model is the baseline (GPT-4 Turbo) has no self row: its preference for itself "
             "lowers every rate on its board and cannot be told from strictness; its family rows remain.</p>"]
    if check:
        lines.append(f"<p>Bound check on the {check['models']} models with per-item annotations: measured SE / "
                     f"bound at most {check['max_raw_se_over_bound']:.2f} (raw) and "
                     f"{check['max_lc_se_over_bound']:.2f} (LC), so the bound holds and is conservative.</p>")
    if pub:
        lines.append(f"<p>The {html.escape(pub['judge'])} board's published rows against our recomputation from its "
                     f"annotations: {judge_table(pd.DataFrame({k: v for k, v in pub.items() if k != 'judge'}))}</p>")
    lines += [judge_table(gaps[cols]), f"<img src='{png.name}' alt='self-preference'>",
              "<h3>Rank each judge gives (1 = best of the non-baseline models)</h3>", judge_table(wide)]
    return "\n".join(lines)
