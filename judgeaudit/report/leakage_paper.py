"""The preference-leakage paper's main tables beside ours (Li et al., 2025, arXiv 2502.01534):
the rows of the report's Papers section that the ``audit``, ``robustness`` and
``leakage_studies`` stages write (judgeaudit/report/paper_rows.py's contract).

The paper's findings are about signs (a related judge favours its student; recognition is no
better than chance; the mitigations barely help), so a row reproduces when our CI says the
same thing; the paper's own figures come from its real models and benchmarks, ours from the
embedded tiny students and judges (or an overlay's checkpoints, named), and are set side by
side, not matched in size."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from judgeaudit.report.paper_rows import paper_row

if TYPE_CHECKING:
    from judgeaudit.config import Params

PAPER = "Preference leakage (Li et al., 2025, arXiv 2502.01534)"
OVERLAY = "params-gpu.yaml (vLLM judges and students of real families)"
EMBEDDED = ("tiny students of our own, distilled (SFT, DPO, ICL) from three generators with planted house "
            "styles, judged by tiny judges of the generators' tiers; the paper's students are Mistral-7B and "
            "Qwen-2.5-14B distilled from GPT-4o, Gemini-1.5 and LLaMA-3.3, judged on Arena-Hard and AlpacaEval 2.0")
_REAL = ("the overlay's checkpoints: students {students} distilled (SFT, DPO, ICL) from {generators}, "
         "judged by the judges of the generators' tiers on the pipeline's prompts; the paper's students are "
         "Mistral-7B and Qwen-2.5-14B distilled from GPT-4o, Gemini-1.5 and LLaMA-3.3, judged on Arena-Hard "
         "and AlpacaEval 2.0")
# the paper's figures, read from its repository's table images (resource/exp/*.png at
# github.com/David-Li0406/Preference-Leakage): Arena-Hard, AlpacaEval 2.0 and their average,
# the Mistral-7B student with GPT-4o & Gemini-1.5 unless said; None: not read offline
PAPER_PLS = {
    "same/sft": "23.6% avg (Arena-Hard 28.7%, AlpacaEval 2.0 18.4%)",
    "inheritance/sft": "19.3% / 22.3% avg (same / different instructions)",
    "same_family/sft": "8.9% / 2.8% avg (same / different series)",
    "same/dpo": "5.2% avg (Arena-Hard 7.7%, AlpacaEval 2.0 2.7%)",
    "same/icl": "-2.7% avg (Arena-Hard -4.2%, AlpacaEval 2.0 -1.1%): no leakage",
}
NO_LEAK = {"same/icl"}  # the paper's finding there is no leakage: reproduced unless our CI is above 0
PAPER_RECOGNITION = "pairwise 29.8-52.0% (mean 42.0%), pointwise 41.0-53.2%: no better than chance"
PAPER_CLASSIFIER = "82.4% (BERT, three generators)"
PAPER_MITIGATION = "the mitigations do not remove the leakage; contextual calibration helps most"
# the paper's Error Bias per mitigation (same-model judges), as a secondary reading of its ICLR 2026
# version quotes them: its table is not in the repository, and how the paper defines Error Bias
# could not be read offline (docs/preference-leakage.md); None: not quoted
PAPER_ERROR_BIAS = {"plain": "17.8", "prompting": "18.3 (no help)", "chain-of-thought": None,
                    "paraphrase": "18.7 (no help)", "automatic-calibration": None,
                    "contextual-calibration": "7.3 (helps)"}
MITIGATIONS = tuple(PAPER_ERROR_BIAS)  # the paper's six rows, in its order
METRICS = {"pls": "PLS", "error_bias": "Error Bias"}
PAPER_MIXING = {  # Figure (b): mixed with manually written data, or with other synthetic data
    "unrelated": "manual data: 12.1% (Arena-Hard), 3.6% (AlpacaEval 2.0) at 10%; 28.7%, 18.4% at 100%",
    "every_style": "other synthetic data: 0.5% (Arena-Hard), -0.7% (AlpacaEval 2.0) at 10%; 28.7%, 18.4% at 100%",
}
PAPER_MIXING_SLOPE = "PLS rises with the share, both mixtures"
# where our mitigation is not the paper's and removes the leakage by construction, not by finding
BY_CONSTRUCTION = {
    "paraphrase": "without attacks.rewriter the paraphrase is a rule that strips the planted style, format "
                  "and wording: it removes PLS by construction (the paper paraphrases with an LLM)",
    "automatic-calibration": "each judge's own offset replaced by the judges' consensus: it removes PLS by "
                             "construction",
}
REWRITTEN = "paraphrased by {rewriter} (attacks.rewriter), an LLM as in the paper"
TIERS = {"same": "same model", "inheritance": "inheritance", "same_family": "same family"}


def setting(generators: Iterable[str], students: Iterable[str], embedded: bool) -> str:
    """What the rows say their figures come from: the embedded default's tiny models, or the
    overlay's checkpoints, named."""
    if embedded:
        return EMBEDDED
    return _REAL.format(students=", ".join(students), generators=", ".join(generators))


def setting_of(params: Params, students: Iterable[str] | None = None) -> str:
    """``setting`` for a run's study: its generators, ``students`` (default the leakage
    students) and judges, embedded only when every one of them is."""
    lk = params.leakage
    students = list(lk.students if students is None else students)
    roster = [r["judge"] for r in params.judge_roster()]
    return setting(lk.generators, students, params.all_built([*lk.generators, *students, *roster]))


def _ci(fig: dict) -> dict:
    return dict(ours=fig["estimate"], ci_low=fig["ci_low"], ci_high=fig["ci_high"], n=int(fig["n"]))


def _above_zero(fig: dict) -> bool | None:
    low = fig.get("ci_low")
    return None if low is None or low != low else bool(low > 0)


def audit_paper_rows(summary: dict, differs: str = EMBEDDED) -> list[dict]:
    """Tables 1-3: PLS per relatedness tier and learning method (the audit stage's summary);
    ``differs``: ``setting``'s text."""
    rows = []
    by = summary.get("pls_by_tier_method", {})
    for key, fig in sorted(by.items()):
        tier, method = key.split("/")
        table = ("Table 1 (main)" if tier == "same" and method == "sft" else
                 "Table 2 (relatedness)" if method == "sft" else "Table 3 (learning methods)")
        above = _above_zero(fig)
        # Table 3 is the same-model setting: DPO and ICL in the other tiers have no paper figure
        rows.append(paper_row(PAPER, table, f"PLS, {method.upper()} students, {TIERS.get(tier, tier)} judges",
                              paper_value=PAPER_PLS.get(key),
                              reproduces=None if above is None else (not above if key in NO_LEAK else above),
                              differs=differs, overlay=OVERLAY, **_ci(fig)))
    return rows


def robustness_paper_rows(summary: dict, differs: str = EMBEDDED, rewriter: str | None = None) -> list[dict]:
    """Table 5 (recognition by the judges and by a classifier) and the mitigation table (PLS
    and Error Bias of the same-model judges under plain judging and each mitigation);
    ``differs``: ``setting``'s text; ``rewriter``: attacks.rewriter (None: by rule)."""
    rows = []
    recognition = summary.get("recognition") or {}
    for r in recognition.get("judges", []):
        if r["judge"] != "all related judges":
            continue
        # the paper's judges do no better than chance (two of its three pairwise figures below it)
        rows.append(paper_row(PAPER, "Table 5 (recognition)",
                              "related judges picking their own student's response, pairwise, pooled (chance 0.5)",
                              paper_value=PAPER_RECOGNITION, ours=r["accuracy"], ci_low=r["ci_low"],
                              ci_high=r["ci_high"], n=int(r["n"]), reproduces=not r["ci_low"] > r["chance"],
                              differs=differs, overlay=OVERLAY))
    for r in recognition.get("classifier", []):
        if r["scope"] != "all":
            continue
        rows.append(paper_row(PAPER, "Table 5 (recognition)",
                              f"linear head on {r.get('encoder', 'a frozen encoder')} naming the student's generator, "
                              f"held-out prompts (chance {r['chance']:.2f})",
                              paper_value=PAPER_CLASSIFIER, ours=r["accuracy"], ci_low=r["ci_low"],
                              ci_high=r["ci_high"], n=int(r["n"]), reproduces=bool(r["ci_low"] > r["chance"]),
                              differs=differs + "; a linear head on a frozen MiniLM, not a fine-tuned BERT",
                              overlay=OVERLAY))
    for metric, name in METRICS.items():
        rows += _mitigation_rows(summary, metric, name, differs, rewriter)
    return rows


def _mitigation_rows(summary: dict, metric: str, name: str, differs: str, rewriter: str | None) -> list[dict]:
    """One metric of the same-model judges under plain judging and each mitigation. Plain
    reproduces when its CI is above 0; contextual calibration when its CI is below plain's,
    the others when theirs is not (the paper's finding)."""
    same = {r["condition"]: r for r in summary.get("mitigation", [])
            if r["metric"] == metric and r["tier"] == "same"}
    plain = same.get("plain")
    if plain is None:
        return []
    leaks = f"leaks (Table 1: {PAPER_PLS['same/sft']})"
    paper = (PAPER_ERROR_BIAS if metric == "error_bias" else
             {c: PAPER_MITIGATION for c in MITIGATIONS} | {"plain": leaks})
    rows = []
    for condition in (c for c in MITIGATIONS if c in same):
        r = same[condition]
        if condition == "plain":
            figure, reproduces = f"{name} under plain judging, same-model judges", _above_zero(r)
        else:
            lowers = r["ci_high"] < plain["ci_low"]  # the intervals apart, the mitigated one below
            figure = (f"{name} under {condition}, same-model judges (plain: {plain['estimate']:+.3f} "
                      f"[{plain['ci_low']:+.3f}, {plain['ci_high']:+.3f}])")
            reproduces = lowers if condition == "contextual-calibration" else not lowers
        how = (REWRITTEN.format(rewriter=rewriter) if condition == "paraphrase" and rewriter
               else BY_CONSTRUCTION.get(condition))
        rows.append(paper_row(PAPER, "mitigation table", figure, paper_value=paper.get(condition),
                              ours=r["estimate"], ci_low=r["ci_low"], ci_high=r["ci_high"], n=int(r["n"]),
                              reproduces=reproduces, overlay=OVERLAY,
                              differs="; ".join(filter(None, (
                                  differs, "held-out half of the prompts, the other half calibrates", how)))))
    return rows


def studies_paper_rows(summary: dict, differs: str = EMBEDDED) -> list[dict]:
    """The data-mixing figure: PLS at the smallest share of the related generator's data, and
    the slope of PLS on the share; ``differs``: ``setting``'s text."""
    mixing = summary.get("mixing")
    if not mixing or not mixing.get("points"):
        return []
    lowest, fit = mixing["points"][0], mixing["fit"]
    styles = ", ".join(summary.get("neutral_styles", []))
    differs = (differs + f"; {summary.get('mixing_student', 'one student')} only, "
               f"{summary.get('tier')} tier; "
               f"neutral data: reference answers in {styles} ({summary.get('neutral', 'unrelated')})")
    neutral = summary.get("neutral", "unrelated")
    above = _above_zero(lowest)
    # manual (unrelated) data: the smallest share leaks; other synthetic data: it does not
    leaks_as_paper = None if above is None else (above if neutral == "unrelated" else
                                                 lowest["ci_low"] <= 0 <= lowest["ci_high"])
    return [paper_row(PAPER, "Figure: data mixing", f"PLS at the smallest share ({lowest['share']:g})",
                      paper_value=PAPER_MIXING.get(neutral), reproduces=leaks_as_paper, differs=differs,
                      overlay=OVERLAY, **_ci(lowest)),
            paper_row(PAPER, "Figure: data mixing", "slope of PLS on the share",
                      paper_value=PAPER_MIXING_SLOPE, ours=fit["slope"], ci_low=fit["slope_ci_low"],
                      ci_high=fit["slope_ci_high"], n=int(fit["n_prompts"]),
                      reproduces=bool(fit["slope_ci_low"] > 0), differs=differs, overlay=OVERLAY)]
