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


def histogram_table(summary: dict, methods: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Scores given per judge, range and method (all, or ``methods``), as counts in columns."""
    return pd.DataFrame([{"source": h["source"], "judge": h["judge"], "assistant": h["assistant"],
                          "range": h["score_range"],
                          "method": LABELS.get(h["method"], h["method"]),
                          **{f"score {k}": v for k, v in h["counts"].items()}}
                         for h in summary["histograms"] if methods is None or h["method"] in methods]).fillna("")


def _md(frame: pd.DataFrame) -> str:
    return frame.to_markdown(index=False) if len(frame) else "(none)"


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
            + "\n\n## Over every range: CD gain, range sensitivity, shared bias\n\n" + EFFECTS_NOTE + "\n\n"
            + _md(effects_table(summary))
            + "\n\n## The judge and its assistant: what they share\n\n" + _md(family_table(summary))
            + "\n\n## Does the assistant share the bias?\n\n" + FAVOURED_NOTE + "\n\n"
            + favoured_table(summary).to_markdown(index=False)
            + "\n\n## Chosen contrastive parameters\n\n" + chosen.round(4).to_markdown(index=False)
            + "\n\nThe whole (lambda, t) grid on the dev split is in grid.parquet:\n\n![grid](grid.png)"
            + "\n\n## The assistant's own scores beside the main judge's\n\n"
            + _md(histogram_table(summary, ("greedy", "assistant_greedy")))
            + "\n\n## Scores given (greedy, assistant alone, CD greedy, reference)\n\n"
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
            + f"<h3>Over every range: CD gain, range sensitivity, shared bias</h3><p>{EFFECTS_NOTE}</p>"
            + html_table(effects_table(score_range["summary"]))
            + "<h3>The judge and its assistant: what they share</h3>"
            + html_table(family_table(score_range["summary"]))
            + "<h3>The assistant's own scores beside the main judge's</h3>"
            + html_table(histogram_table(score_range["summary"], ("greedy", "assistant_greedy")))
            + f"<h3>Does the assistant share the bias?</h3><p>{FAVOURED_NOTE}</p>"
            + html_table(favoured_table(score_range["summary"])) + imgs)


PAPER = "Score range bias (Fujinuma, 2025)"
PAPER_GAIN = ("up to +11.7% (range-averaged relative Spearman gain over the single judge; "
              "arXiv 2510.18196v2 abstract, ACL Findings 2026; v1: 11.3%)")
PAPER_SENSITIVE = "outputs highly sensitive to the score range (abstract, arXiv 2510.18196)"
PAPER_FAMILY = "similar biases among models of the same family (abstract, arXiv 2510.18196)"


def _differs(embedded: bool, source: str) -> str:
    if embedded:
        return ("tiny models of our own (a 2-layer main judge, a smaller same-style assistant), fine-tuned to "
                "score graded template answers; the family's favourite score is planted in a rated corpus both "
                "share, each model also trained on rows of its own with its own seed"
                + ("" if source == "embedded" else f"; reference: {source}"))
    return ("the judges' own checkpoints scoring as they are (no fine-tune, no planted favourite), "
            + ("on SummEval's expert scores as in the paper" if source == "summeval" else
               "on our graded template answers, where the paper scores SummEval summaries"))


def score_range_paper_rows(summary: dict, *, embedded: bool, overlay: str) -> list[dict]:
    """The paper's main tables beside ours, per source and (judge, assistant): the judge's
    range sensitivity and favoured-score excess (score-range bias), whether its assistant
    shares the bias, and the CD gain under greedy and expected decoding."""
    from judgeaudit.report.paper_rows import paper_row

    rows = []
    for e in summary.get("effects", []):
        who = f"{e['judge']} + {e['assistant']}" + ("" if e["source"] == "embedded" else f", {e['source']}")
        ranges = ", ".join(e["ranges"])
        base = dict(n=int(e["n"]), differs=_differs(embedded, e["source"]), overlay=overlay)

        def ci(name: str) -> dict:
            return dict(ours=e[name], ci_low=e[f"{name}_ci_low"], ci_high=e[f"{name}_ci_high"])

        def above_zero(name: str) -> bool | None:
            low = e[f"{name}_ci_low"]
            return None if low != low else bool(low > 0)

        rows += [
            paper_row(PAPER, "Score-range bias (correlation per range)",
                      f"spread of greedy Spearman over ranges {ranges} (max - min), {who}",
                      paper_value=PAPER_SENSITIVE, reproduces=above_zero("spread_greedy"), **ci("spread_greedy"),
                      **base),
            paper_row(PAPER, "Score-range bias (scores given)",
                      f"main judge's excess share of its favoured score over the reference, mean over ranges, {who}",
                      **ci("main_excess"), **base),
            paper_row(PAPER, "Family bias (scores given, same family)",
                      f"assistant's excess share of the judge's favoured score, mean over ranges, {who}",
                      paper_value=PAPER_FAMILY, reproduces=above_zero("assistant_excess"),
                      **ci("assistant_excess"), **base),
            *(paper_row(PAPER, "Contrastive decoding (Spearman per range)",
                        f"CD gain, {d}: range-averaged relative Spearman gain over the judge alone, {who}",
                        paper_value=PAPER_GAIN, reproduces=above_zero(f"cd_gain_{d}"), **ci(f"cd_gain_{d}"), **base)
              for d in ("greedy", "expected"))]
    return rows


def effects_table(summary: dict) -> pd.DataFrame:
    """Per (judge, assistant): the effects over every range at once, with CIs."""
    rows = []
    for e in summary.get("effects", []):
        row = {"source": e["source"], "judge": e["judge"], "assistant": e["assistant"], "n": e["n"]}
        for name, pct in (("cd_gain_greedy", True), ("cd_gain_expected", True), ("cd_delta_greedy", False),
                          ("cd_delta_expected", False), ("spread_greedy", False), ("main_excess", False),
                          ("assistant_excess", False)):
            row[name.replace("_", " ")] = _ci(e[name], e[f"{name}_ci_low"], e[f"{name}_ci_high"], pct=pct)
        row["assistant shares the bias"] = "yes" if e["shared"] else "not found"
        rows.append(row)
    return pd.DataFrame(rows)


def family_table(summary: dict) -> pd.DataFrame:
    """What the judge and its assistant share, and what each has of its own."""
    return pd.DataFrame(summary.get("families", []))


EFFECTS_NOTE = ("Over every range at once, on the test answers (n), resampled jointly across ranges: CD gain = "
                "mean over ranges of (Spearman of CD - Spearman of the judge alone) / |Spearman of the judge alone|, "
                "for greedy and expected decoding (CD delta: the same without the division); spread = max - min of "
                "the judge's greedy Spearman over ranges; excess = share of answers given the range's favoured "
                "score minus the reference's share, averaged over ranges. The assistant shares the bias where its "
                "excess CI lies above 0: a finding, since the two share only the family's rated corpus.")
