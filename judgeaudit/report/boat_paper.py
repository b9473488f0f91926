"""The BOAT stage's rows for the report's Papers section (docs/papers.md): the unbiased
evaluator's main results (the accuracy drop under BOAT, each intervention alone), its
probing task (agents as evaluators) and its Table 1 (data bias against accuracy per
subject), ours with n and CI. The paper's own figures were not read offline (its text
beyond the abstract was not available here), so ``paper_value`` is None throughout."""

from __future__ import annotations

from judgeaudit.report.paper_rows import paper_row

PAPER = "Unbiased evaluator, BOAT (Chen et al., 2025)"
OVERLAY = "params-gpu.yaml boat"
_GENERATED = ("generated template items and a tiny embedded model fine-tuned on them, where the paper "
              "evaluates released LLMs on MMLU, ARC, GSM8K and others")
_GENERATED_REAL = ("generated template items and {model} (the overlay's checkpoint, fine-tuned on them where "
                   "contaminated), where the paper evaluates released LLMs on MMLU, ARC, GSM8K and others")
_AGAINST = ("Paired over items against the un-intervened MCQ, scored as the intervened items are "
            "(on GSM8K not the generated vanilla); ")


def _benchmarks(summary: dict) -> dict[str, dict]:
    return {"generated": {m: summary[m] for m in ("clean", "contaminated") if m in summary},
            **summary.get("real", {})}


def _row(table: str, figure: str, est: dict | None, differs: str, *, key: str = "accuracy",
         n_key: str = "n") -> dict:
    est = est or {}
    n = est.get(n_key)
    n = None if n is None or n != n else int(n)  # records of a frame with gaps carry floats
    return paper_row(PAPER, table, figure, ours=est.get(key), ci_low=est.get(f"{key}_ci_low", est.get("ci_low")),
                     ci_high=est.get(f"{key}_ci_high", est.get("ci_high")), n=n, differs=differs,
                     overlay=OVERLAY)


def _interventions(summary: dict, generated: str, local: str) -> list[dict]:
    rows = []
    for r in summary.get("single", []):
        if r.get("model") != "clean":
            continue
        rows.append(paper_row(PAPER, "Each intervention alone", f"accuracy change | {r['intervention']} | "
                              f"{r['benchmark']} | clean", ours=r["delta"], ci_low=r["delta_ci_low"],
                              ci_high=r["delta_ci_high"], n=int(r["n"]), overlay=OVERLAY,
                              differs=_AGAINST + generated
                              if r["benchmark"] == "generated" else _AGAINST + "a "
                              f"sample of the real benchmark and {local}."))
    return rows


def _probe(probe: dict, rewriters: str) -> list[dict]:
    rates = probe.get("rates", [])
    if not rates:
        return []
    top = max(r["strength"] for r in rates)
    rule = probe.get("rule", "paper")
    agents = ", ".join(probe.get("agents", [])) or "none"
    differs = (f"Template items rewritten by a rule, by {rewriters} ({agents})"
               f" and by BOAT, strength {top} (strength as {probe.get('strength_as')}); scored by "
               f"the roster's judges ({len(probe.get('judges', []))}), where the paper uses released LLMs.")
    rows = []
    for r in rates:
        if r["strength"] != top:
            continue
        fig = f"{{}} | {r['rewriter']} | s = {top}"
        if r["judge"] == "consensus" and rule == "paper":
            rows.append(_row("Probing task (agents as evaluators)", fig.format("consensus-error rate"), r, differs,
                             key="consensus_error", n_key="consensus_error_n"))
        elif r["judge"] == ("judges" if rule == "paper" else "consensus"):
            for key in ("over_confidence", "under_confidence"):
                if key in r and r[key] == r[key]:
                    rows.append(_row("Probing task (agents as evaluators)",
                                     fig.format(key.replace("_", "-") + " rate"), r, differs, key=key,
                                     n_key=f"{key}_n"))
    return rows


def boat_paper_rows(summary: dict, *, model: str | None = None, agents_embedded: bool = True) -> list[dict]:
    """At least one row per main table: accuracy drop per benchmark and model, each
    intervention alone (clean model), the probing task's rates, Table 1's correlation.
    ``model``: BOAT's model where it is an overlay's checkpoint (None: an embedded one);
    ``agents_embedded``: whether the probe's agents are embedded models."""
    generated = _GENERATED if model is None else _GENERATED_REAL.format(model=model)
    local = "a small local model" if model is None else f"{model}, the overlay's checkpoint"
    rows = []
    for bench, runs in _benchmarks(summary).items():
        for run, s in runs.items():
            differs = (generated if bench == "generated" else f"A sample of real {bench} items and {local}")
            if run == "contaminated":
                differs += "; contaminated by fine-tuning on the test items (the paper's evidence of "\
                           "contamination is a larger drop)"
            rows.append(_row("Main results (vanilla vs BOAT)", f"accuracy drop vanilla - BOAT | {bench} | {run}",
                             s.get("drop"), differs + "."))
    rows += _interventions(summary, generated, local)
    probe = summary.get("probe") or {}
    rows += _probe(probe, "tiny local agents" if agents_embedded else "the overlay's agents")
    t1 = probe.get("table1")
    if t1 is not None:
        rows.append(paper_row(PAPER, "Table 1", "Pearson r of data bias and accuracy over subjects",
                              ours=t1.get("r"), ci_low=t1.get("ci_low"), ci_high=t1.get("ci_high"), n=t1.get("n"),
                              overlay=OVERLAY,
                              differs="Subjects are our template categories (n is their number, so the CI is "
                                      "wide); data bias: consensus error of the rule's and agents' rewrites; "
                                      "accuracy: the judges' zero-shot MCQ accuracy on the original items."))
    return rows
