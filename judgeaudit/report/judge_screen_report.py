"""The judge's screen as Markdown: the headline figures first (accuracy, agreement between
orders, drift against the previous audit, a change of the endpoint's reported model), each
bias with its CI, then the baselines and the subsets they call into question."""

from __future__ import annotations

from pathlib import Path

from judgeaudit.audits.drift import label
from judgeaudit.audits.judge_screen import JudgeScreen


def figure_text(f: dict | None) -> str:
    """A figure as "estimate [ci_low, ci_high] (n=...)", or n/a where undefined."""
    if f is None or f.get("estimate") is None or f["estimate"] != f["estimate"]:  # None or NaN: undefined
        return "n/a"
    return f"{f['estimate']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] (n={f['n']})"


def verdict_text(metrics: dict) -> str:
    """A bias's verdict: FOUND (some metric's CI excludes zero), with "(not beyond control)"
    where every found metric that has a control comparison is within the control's; else no."""
    found = [v for v in metrics.values() if (v or {}).get("found")]
    if not found:
        return "no"
    compared = [v["beyond_control"] for v in found if v.get("beyond_control") is not None]
    return "FOUND (not beyond control)" if compared and not any(compared) else "FOUND"


def drift_text(s: dict) -> str:
    """The headline's drift cell: how many figures drifted against which audit, and which."""
    if not s.get("drift"):
        return "no earlier audit compared" if s.get("drift_against") is None else "nothing comparable"
    moved = [label(r) for r in s["drift"] if r["drifted"]]
    named = f": **{', '.join(moved)}**" if moved else ""
    return f"{len(moved)} of {len(s['drift'])} figures drifted against {s.get('drift_against')}{named}"


def endpoint_text(versions: list[dict]) -> str:
    """The headline's endpoint cell: the model (and fingerprint) the endpoint reported, and
    a CHANGE where the records hold more than one."""
    named = [f"{v['model'] or 'no model named'}" + (f" ({v['system_fingerprint']})" if v.get("system_fingerprint") else "")
             + f", {v['calls']} calls from {v['first_seen']}" for v in versions]
    return ("**CHANGED**: " if len(versions) > 1 else "") + "; then ".join(named)


def screen_markdown(screen: JudgeScreen) -> str:
    s = screen.summary
    lines = [f"# Judge audit: {s.get('judge')} ({s.get('strategy')})", "",
             f"`{s.get('identity', '')}` on {s['pairs']} pairs of {', '.join(s['sources'])}, both orders; "
             f"{s['unparseable']} of {s['verdicts']} verdicts unparseable.", "",
             "| figure | estimate [CI] (n) |", "|---|---|",
             f"| accuracy (labelled pairs) | {figure_text(s.get('accuracy'))} |",
             f"| agreement between the two orders | {figure_text(s.get('order_agreement'))} |",
             f"| drift against the previous audit | {drift_text(s)} |"]
    if s.get("endpoint_versions"):
        lines.append(f"| model the endpoint reported | {endpoint_text(s['endpoint_versions'])} |")
    lines += ["",
             "## Biases", "", "Flip rate: the share of decided pairs the bias turns to the response the judge "
             "made lose. Wrong rate: the share of labelled pairs it turns to the wrong response. "
             "Found: the CI excludes zero. Vs control: the flip rate minus the neutral-edit control's on the "
             "same pairs (a line break around the attacked response, no word changed); beyond control: that "
             "CI excludes zero above. A bias found but not beyond control moves the judge no more than any "
             "edit does.", "", "![battery](battery.png)", "",
             "| bias | flip rate | wrong rate | vs control | found |", "|---|---|---|---|---|"]
    for bias, m in s["biases"].items():
        lines.append(f"| {bias} | {figure_text(m.get('flip_rate'))} | {figure_text(m.get('wrong_rate'))} | "
                     f"{figure_text((m.get('flip_rate') or {}).get('vs_control'))} | {verdict_text(m)} |")
    if se := s.get("self_enhancement"):
        pref = se.get("self_preference") or {}
        lines += ["", "## Self-enhancement", "",
                  f"The judge's own answers (written through its endpoint) paired against another answer to the "
                  f"same prompt, judged in both orders by the judge and by the reference judge `{se['reference']}`. "
                  "Self-preference: the judge's win rate for its own answers minus the reference's on the same "
                  "pairs (paired bootstrap); found where its CI excludes zero.", "",
                  "| figure | estimate [CI] (n) |", "|---|---|",
                  f"| own answers' win rate, the judge | {figure_text(se.get('own_win_rate'))} |",
                  f"| own answers' win rate, the reference | {figure_text(se.get('reference_win_rate'))} |",
                  f"| self-preference | {figure_text(pref or None)} {'**found**' if pref.get('found') else ''} |"]
    lines += ["", "## Content-blind baselines", "",
              "Accuracy of always choosing the longer, the shorter, or the first-shown response; a subset where "
              "one is as accurate as the judge (CIs overlapping) says little about the judge.", "",
              "| baseline | accuracy | as accurate as the judge |", "|---|---|---|"]
    for name, f in s.get("baselines", {}).items():
        lines.append(f"| {name} | {figure_text(f)} | {'**yes**' if f.get('as_accurate_as_judge') else 'no'} |")
    if s["flagged_subsets"]:
        lines += ["", "Flagged subsets: " + "; ".join(f"{r['source']}/{r['subset']} ({r['baselines']})"
                                                     for r in s["flagged_subsets"])]
    if s.get("pointwise"):
        lines += ["", "## Pointwise scores", "", "Spearman correlation of each score range's scores with the label "
                  "(the better response 1, the other 0); cd_*: contrastive decoding against the assistant.", "",
                  "![scores](scores.png)", "", "| range | method | Spearman |", "|---|---|---|"]
        lines += [f"| {r['score_range']} | {r['method']} | {figure_text(r)} |" for r in s["pointwise"]["spearman"]]
    if s.get("drift"):
        lines += ["", "## Drift against the previous audit", "", "| figure | before | now | difference | drifted |",
                  "|---|---|---|---|---|"]
        lines += [f"| {label(r)} | {r['before']:.3f} | {r['now']:.3f} | "
                  f"{figure_text({'estimate': r['difference'], 'ci_low': r['ci_low'], 'ci_high': r['ci_high'], 'n': r['n']})} | "
                  f"{'**yes**' if r['drifted'] else 'no'} |" for r in s["drift"]]
    if s.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in s["notes"]]
    return "\n".join(lines) + "\n"


def write_screen_report(screen: JudgeScreen, path: Path) -> Path:
    path.write_text(screen_markdown(screen))
    return path
