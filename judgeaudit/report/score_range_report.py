"""The score-range audit as markdown (and an HTML section of the main report): each
judge's agreement with the reference per score range, greedy vs contrastive decoding,
every figure with its n and bootstrap CI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.report.format import copy_images, html_table

LABELS = {"greedy": "greedy", "expected": "expected", "cd_greedy": "CD greedy", "cd_expected": "CD expected",
          "assistant_greedy": "assistant alone (greedy)"}


def _ci(est: float, low: float, high: float, pct: bool = False) -> str:
    if pd.isna(est) or not np.isfinite(est):
        return "undefined"
    f = (lambda v: f"{100 * v:+.0f}%") if pct else (lambda v: f"{v:.3f}")
    return f"{f(est)} [{f(low)}, {f(high)}]"


def correlation_grid(corr: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge, assistant) x range x method: each correlation with its CI, and
    the relative improvement over greedy in Spearman."""
    rows = []
    for (source, judge, assistant, rng, method), g in corr.groupby(
            ["source", "judge", "assistant", "score_range", "method"], sort=False):
        by = g.set_index("kind")
        row = {"source": source, "judge": judge, "assistant": assistant, "range": rng,
               "method": LABELS.get(method, method), "n": int(by.n.iloc[0])}
        for kind in ("spearman", "pearson", "kendall"):
            if kind in by.index:
                r = by.loc[kind]
                row[kind] = _ci(r.estimate, r.ci_low, r.ci_high)
        s = by.loc["spearman"]
        greedy = method == "greedy"
        row["Δ spearman vs greedy"] = "" if greedy else _ci(s.improvement, s.imp_ci_low, s.imp_ci_high)
        row["relative Δ"] = "" if greedy else _ci(s.rel_improvement, s.rel_ci_low, s.rel_ci_high, pct=True)
        rows.append(row)
    return pd.DataFrame(rows)


def histogram_table(summary: dict) -> pd.DataFrame:
    """Scores given per judge, range and method, as counts in columns."""
    return pd.DataFrame([{"source": h["source"], "judge": h["judge"], "assistant": h["assistant"],
                          "range": h["score_range"],
                          "method": h["method"],
                          **{f"score {k}": v for k, v in h["counts"].items()}}
                         for h in summary["histograms"]]).fillna("")


def favoured_table(summary: dict) -> pd.DataFrame:
    """Per (judge, assistant) and range: the score the judge over-gives, how often the judge,
    its assistant alone and the reference give it on the test split, with CIs."""
    rows = []
    for f in summary.get("favoured", []):
        row = {"source": f["source"], "judge": f["judge"], "assistant": f["assistant"], "range": f["score_range"],
               "favoured score": f["favoured"], "n": f["n"]}
        for name in ("main_share", "assistant_share", "reference_share", "assistant_excess"):
            row[name.replace("_", " ")] = _ci(f[name], f[f"{name}_ci_low"], f[f"{name}_ci_high"])
        rows.append(row)
    return pd.DataFrame(rows)


FAVOURED_NOTE = ("The score each judge over-gives most (chosen on the dev split: its count minus the reference's) "
                 "and, on the test split, the share of answers given it by the judge, by its assistant alone and by "
                 "the reference; 'assistant excess' = assistant minus reference, paired over answers. An excess whose "
                 "CI lies above 0 is the evidence contrastive decoding rests on: the smaller same-family model "
                 "shares the bias, so subtracting it removes the bias more than the signal.")


def write_score_range_report(corr: pd.DataFrame, summary: dict, path: Path) -> Path:
    """Markdown report next to the histograms plot."""
    chosen = pd.DataFrame(summary["chosen"])
    conf = int(round(100 * float(corr.confidence.iloc[0])))
    sp = corr[(corr.kind == "spearman") & (corr.source == "embedded")].pivot_table(
        index=["judge", "assistant", "score_range"], columns="method", values="estimate", sort=False)
    mean = sp.mean()
    sources = "".join(f"- {k}: {v}\n" for k, v in summary["sources"].items())
    text = (f"# Score-range bias and contrastive decoding\n\nSources:\n{sources}\n"
            "Every answer is scored under every range; "
            f"lambda and t are chosen per judge and range on the dev split (n_dev), every figure below is on "
            f"the held-out rest (n), with {conf}% percentile bootstrap CIs over answers. "
            "CD = contrastive decoding (log p_main - lambda log p_assistant) / t. Relative Δ is unstable "
            "where greedy's correlation is near 0; read the absolute Δ there.\n\n"
            f"Mean Spearman over the embedded judges and ranges: greedy {mean.get('greedy', float('nan')):.3f}, "
            f"expected {mean.get('expected', float('nan')):.3f}, CD greedy {mean.get('cd_greedy', float('nan')):.3f}, "
            f"CD expected {mean.get('cd_expected', float('nan')):.3f}.\n\n"
            "## Agreement with the reference scores\n\n" + correlation_grid(corr).to_markdown(index=False)
            + "\n\n## Does the assistant share the bias?\n\n" + FAVOURED_NOTE + "\n\n"
            + favoured_table(summary).to_markdown(index=False)
            + "\n\n## Chosen contrastive parameters\n\n" + chosen.round(4).to_markdown(index=False)
            + "\n\nThe whole (lambda, t) grid on the dev split is in grid.parquet:\n\n![grid](grid.png)"
            + "\n\n## Scores given (greedy, CD greedy, reference)\n\n"
            + histogram_table(summary).to_markdown(index=False) + "\n\n![histograms](histograms.png)\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def score_range_section(score_range: dict | None, out_dir: Path) -> str:
    """The score-range audit's HTML, its plots copied beside the report; "" where it did not run."""
    if not score_range:
        return ""
    imgs = copy_images({"scores given per range": "histograms.png", "lambda x t grid": "grid.png"},
                       Path(score_range["dir"]), out_dir, "score_range_") if score_range.get("dir") else ""
    return ("<h2>Score-range bias and contrastive decoding</h2><p>Pointwise judges score the same graded "
            "answers under each range; correlation with the reference scores (95% bootstrap CIs, n answers "
            "in the test split), greedy vs contrastive decoding with a smaller same-family assistant.</p>"
            + html_table(correlation_grid(score_range["correlations"]))
            + f"<h3>Does the assistant share the bias?</h3><p>{FAVOURED_NOTE}</p>"
            + html_table(favoured_table(score_range["summary"])) + imgs)
