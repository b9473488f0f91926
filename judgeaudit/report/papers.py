"""The report's Papers section: every row the stages that reproduce a paper wrote
(``<stage out>/paper_rows.json``, judgeaudit/report/paper_rows.py), the paper's figure beside
ours with its CI and n, whether it reproduces, what differs and the overlay that runs it on the
paper's real models; as HTML, as a markdown table and in report.json (docs/papers.md)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from judgeaudit.layout import Layout
from judgeaudit.report.paper_rows import PAPER_ROWS_FILE, read_paper_rows
from judgeaudit.report.plots import plt, save_tight

# the stage output folders (Layout's names) whose rows the section gathers, in the report's order
PAPER_SOURCES = ("metrics", "robustness", "leakage_studies", "score_range", "prefix", "pu", "boat",
                 "real_judges", "leaderboard")
NOT_READ = "not read offline"
VERDICT = {True: "yes", False: "NO", None: "unknown"}
_PLAIN_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)\s*$")


def gather_papers(layout: Layout) -> dict:
    """Every source folder's rows (each with ``source``: the stage folder it came from), what
    each folder held, and a note per folder without rows. A folder's bad file raises
    ``PaperRowError`` naming the file and the field: a stage's rows are its figures."""
    rows, sources, notes = [], [], []
    for name in PAPER_SOURCES:
        folder = getattr(layout, name)
        found = read_paper_rows(folder)
        rows += [{**row, "source": name} for row in found]
        sources.append({"stage": name, "file": layout.to_stored(folder / PAPER_ROWS_FILE),
                        "found": (folder / PAPER_ROWS_FILE).exists(), "rows": len(found)})
        if not (folder / PAPER_ROWS_FILE).exists():
            notes.append(f"{name}: no {PAPER_ROWS_FILE} ("
                         + ("the stage wrote none" if folder.exists() else "the stage has not run") + ")")
    counts = {VERDICT[flag]: sum(r["reproduces"] is flag for r in rows) for flag in (True, False, None)}
    return {"rows": rows, "sources": sources, "notes": notes, "counts": counts}


def _num(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def ours_text(row: dict) -> str:
    """"ours [ci_low, ci_high] (n=...)", each part only where known."""
    if row["ours"] is None:
        return "not measured"
    text = _num(row["ours"])
    if row["ci_low"] is not None and row["ci_high"] is not None:
        text += f" [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
    return text + (f" (n={row['n']})" if row["n"] is not None else "")


def _cells(row: dict) -> list[str]:
    return [row["table"], row["figure"], row["paper_value"] or NOT_READ, ours_text(row),
            VERDICT[row["reproduces"]], row["differs"], row["overlay"]]


HEADER = ["table", "figure", "paper's value", "ours [CI] (n)", "reproduces", "what differs", "overlay"]


def _by_paper(rows: list[dict]) -> dict[str, list[dict]]:
    papers: dict[str, list[dict]] = {}
    for row in rows:
        papers.setdefault(row["paper"], []).append(row)
    return papers


def paper_number(text: str | None) -> float | None:
    """The paper's figure where its text is a plain number (no unit, no range), else None."""
    return float(text) if text is not None and _PLAIN_NUMBER.match(text) else None


def plot_papers(rows: list[dict], path: Path) -> Path | None:
    """Ours (with its CI) against the paper's figure, where both are plain numbers; None
    where no row has both."""
    points = [(paper_number(r["paper_value"]), r) for r in rows]
    points = [(x, r) for x, r in points if x is not None and r["ours"] is not None]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 5))
    colour = {True: "#17662a", False: "#a11", None: "#888"}
    for flag in (True, False, None):
        part = [(x, r) for x, r in points if r["reproduces"] is flag]
        if not part:
            continue
        xs, ours = [x for x, _ in part], [r["ours"] for _, r in part]
        err = [[max(r["ours"] - r["ci_low"], 0) if r["ci_low"] is not None else 0 for _, r in part],
               [max(r["ci_high"] - r["ours"], 0) if r["ci_high"] is not None else 0 for _, r in part]]
        ax.errorbar(xs, ours, yerr=err, fmt="o", color=colour[flag], capsize=3,
                    label=f"reproduces: {VERDICT[flag]} ({len(part)})")
    values = [x for x, _ in points] + [r["ours"] for _, r in points]
    lo, hi = min(values), max(values)
    ax.plot([lo, hi], [lo, hi], ls="--", color="#bbb", lw=1)
    ax.set_xlabel("paper's figure")
    ax.set_ylabel("ours (embedded default, CI)")
    ax.set_title("Ours against the paper's figure (where it is a plain number)", fontsize=9)
    ax.legend(fontsize=8)
    return save_tight(fig, path)


def papers_section(papers: dict | None, out_dir: Path) -> str:
    """The section's HTML: a table per paper, each NO row marked; the plot where it has points."""
    if papers is None:
        return ""
    counts = papers["counts"]
    parts = ["<h1 id=\"papers\">Papers: their figures beside ours</h1>",
             f"<p>{len(papers['rows'])} rows over {len(_by_paper(papers['rows']))} papers: "
             f"<span class=\"ok\">{counts['yes']} reproduce</span>, "
             f"<span class=\"bad\">{counts['NO']} do not (NO)</span>, {counts['unknown']} unknown "
             f"(the paper's figure {NOT_READ}, or no verdict). Ours: the embedded default on CPU, "
             "with its bootstrap CI and n; overlay: the params-gpu.yaml section that runs the same "
             "experiment on the paper's real models (vLLM backend). docs/papers.md.</p>"]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    for paper, rows in _by_paper(papers["rows"]).items():
        body = []
        for row in rows:
            cells = _cells(row)
            verdict = {"yes": "ok", "NO": "bad", "unknown": "care"}[cells[4]]
            tds = "".join(f"<td class=\"{verdict}\">{html.escape(c)}</td>" if k == 4 else f"<td>{html.escape(c)}</td>"
                          for k, c in enumerate(cells))
            mark = ' class="no" style="background:#fde8e8"' if row["reproduces"] is False else ""
            body.append(f"<tr{mark}>{tds}</tr>")
        parts.append(f"<h2>{html.escape(paper)}</h2><table class=\"t\"><tr>{head}</tr>{''.join(body)}</table>")
    png = plot_papers(papers["rows"], out_dir / "papers.png")
    if png is not None:
        parts.append(f'<img src="{png.name}" alt="ours against the paper\'s figure">')
    if papers["notes"]:
        parts.append("<p>Without rows: " + "; ".join(html.escape(n) for n in papers["notes"]) + ".</p>")
    return "\n".join(parts)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def papers_markdown(papers: dict | None) -> str:
    """The section as one markdown table (paper first), NO in bold; the folders without rows after it."""
    if papers is None:
        return ""
    lines = ["| paper | " + " | ".join(HEADER) + " |", "|" + "---|" * (len(HEADER) + 1)]
    for row in papers["rows"]:
        cells = [_md(c) for c in [row["paper"], *_cells(row)]]
        cells[5] = "**NO**" if cells[5] == "NO" else cells[5]
        lines.append("| " + " | ".join(cells) + " |")
    notes = "".join(f"\n- {_md(n)}" for n in papers["notes"])
    return "# Papers: their figures beside ours\n\n" + "\n".join(lines) + ("\n\nWithout rows:" + notes if notes else "") + "\n"
