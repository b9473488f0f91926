"""The Papers section (issue 67): a stage's rows are checked as they are built and read back,
the report gathers every stage folder's paper_rows.json through the data root's Layout, and
renders them as HTML (rows that do not reproduce marked), markdown and report.json's key."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgeaudit.layout import Layout
from judgeaudit.report.paper_rows import (PAPER_ROW_KEYS, PaperRowError, paper_row, read_paper_rows,
                                          write_paper_rows)
from judgeaudit.report.papers import PAPER_SOURCES, gather_papers, papers_markdown, papers_section, paper_number


def _rows() -> dict[str, list[dict]]:
    """Rows as two stages would write them: one reproduces, one does not, one unknown."""
    return {"metrics": [paper_row("Leakage (test)", "Table 2", "PLS, SFT, same", paper_value="0.25",
                                  ours=np.float64(0.21), ci_low=0.15, ci_high=0.27, n=np.int64(48),
                                  reproduces=np.bool_(True), differs="tiny students", overlay="leakage_gpu"),
                        paper_row("Leakage (test)", "Table 5", "recognition accuracy", paper_value="0.72",
                                  ours=0.383, ci_low=0.371, ci_high=0.395, n=600, reproduces=False,
                                  differs="judges of 1M parameters <cannot> recognise", overlay="leakage_gpu")],
            "boat": [paper_row("BOAT (test)", "Table 1", "accuracy drop | MMLU", ours=0.1, ci_low=0.05,
                               ci_high=0.15, n=200, reproduces=True)]}


def _root(tmp_path) -> Layout:
    layout = Layout(tmp_path)
    for stage, rows in _rows().items():
        write_paper_rows(rows, getattr(layout, stage))
    layout.pu.mkdir()  # ran, wrote no rows
    return layout


def test_a_row_has_the_contract_keys_and_plain_types():
    row = _rows()["metrics"][0]
    assert tuple(row) == PAPER_ROW_KEYS
    assert (type(row["ours"]), type(row["n"]), type(row["reproduces"])) == (float, int, bool)
    assert json.loads(json.dumps(row)) == row


def test_a_row_without_the_papers_figure_cannot_claim_to_reproduce():
    assert _rows()["boat"][0]["reproduces"] is None
    assert paper_row("P", "T", "f", paper_value=0.25)["paper_value"] == "0.25"  # a number kept as text
    assert paper_row("P", "T", "f", ours=float("nan"))["ours"] is None  # as JSON writes it


@pytest.mark.parametrize("field, value", [("ours", "0.3"), ("n", 2.5), ("n", -1), ("n", True),
                                          ("reproduces", "yes"), ("ci_low", [0.1]), ("differs", None),
                                          ("paper_value", [1])])
def test_a_bad_type_fails_naming_the_field(field, value):
    with pytest.raises(PaperRowError, match=f"'{field}'"):
        paper_row("P", "Table 1", "f", **{"paper_value": "1", field: value})


def test_an_empty_name_or_reversed_interval_fails():
    with pytest.raises(PaperRowError, match="'table'"):
        paper_row("P", " ", "f")
    with pytest.raises(PaperRowError, match="reversed"):
        paper_row("P", "T", "f", ours=0.5, ci_low=0.6, ci_high=0.4)


def test_a_file_with_a_missing_or_unknown_field_fails_naming_file_and_field(tmp_path):
    row = dict(_rows()["boat"][0])
    del row["overlay"]
    (tmp_path / "paper_rows.json").write_text(json.dumps([{**row, "extra": 1}]))
    with pytest.raises(PaperRowError, match=r"paper_rows.json.*\['overlay'\].*\['extra'\]"):
        read_paper_rows(tmp_path)
    assert read_paper_rows(tmp_path / "absent") == []


def test_rows_read_back_equal_what_was_written(tmp_path):
    rows = _rows()["metrics"]
    write_paper_rows(rows, tmp_path)
    assert read_paper_rows(tmp_path) == rows


def test_the_report_gathers_every_stage_folders_rows_and_notes_the_rest(tmp_path):
    papers = gather_papers(_root(tmp_path))
    assert [(r["source"], r["table"]) for r in papers["rows"]] == [
        ("metrics", "Table 2"), ("metrics", "Table 5"), ("boat", "Table 1")]
    assert papers["counts"] == {"yes": 1, "NO": 1, "unknown": 1}
    found = {s["stage"]: s["rows"] for s in papers["sources"] if s["found"]}
    assert found == {"metrics": 2, "boat": 1}
    assert len(papers["notes"]) == len(PAPER_SOURCES) - 2
    assert "pu: no paper_rows.json (the stage wrote none)" in papers["notes"]
    assert "prefix: no paper_rows.json (the stage has not run)" in papers["notes"]


def test_the_report_inputs_carry_the_papers(tmp_path):
    from judgeaudit.report.inputs import read_inputs
    from tests.test_report_inputs import _audit_root, _figures

    layout = _audit_root(tmp_path, _figures("pls"))
    write_paper_rows(_rows()["boat"], layout.boat)
    assert [r["paper"] for r in read_inputs(layout).papers["rows"]] == ["BOAT (test)"]


def test_the_section_shows_each_paper_and_marks_the_rows_that_do_not_reproduce(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    page = papers_section(gather_papers(_root(tmp_path)), out)
    assert page.count("<h2>") == 2 and "<h2>Leakage (test)</h2>" in page
    marked = [tr for tr in page.split("<tr") if 'class="no"' in tr]
    assert len(marked) == 1 and "recognition accuracy" in marked[0] and ">NO<" in marked[0]
    assert "0.383 [0.371, 0.395] (n=600)" in page and "&lt;cannot&gt;" in page  # escaped
    assert "not read offline" in page and ">unknown<" in page
    assert (out / "papers.png").stat().st_size > 0  # two rows have both figures as numbers
    assert papers_section(None, out) == ""


def test_the_markdown_table_has_a_line_per_row_and_bold_no(tmp_path):
    text = papers_markdown(gather_papers(_root(tmp_path)))
    lines = [line for line in text.splitlines() if line.startswith("| ") and "paper's value" not in line]
    assert len(lines) == 3 and all(line.count(" | ") == 7 for line in lines)  # the '|' in a figure escaped
    assert "| **NO** |" in lines[1] and "accuracy drop \\| MMLU" in lines[2]


def test_a_papers_figure_is_plotted_only_where_it_is_a_plain_number():
    assert [paper_number(t) for t in ("0.25", "-3", ".5", "38.3%", "0.2-0.4", None)] == [
        0.25, -3.0, 0.5, None, None, None]


def test_the_leakage_papers_rows_judge_its_findings_by_our_intervals():
    from judgeaudit.report.leakage_paper import audit_paper_rows, robustness_paper_rows

    fig = lambda e, lo, hi: {"estimate": e, "ci_low": lo, "ci_high": hi, "n": 30}  # noqa: E731
    audit = audit_paper_rows({"pls_by_tier_method": {"same/sft": fig(0.4, 0.1, 0.6),
                                                     "inheritance/sft": fig(0.1, -0.1, 0.3),
                                                     "same/icl": fig(-0.2, -0.3, -0.1)}})
    by = {r["figure"]: r for r in audit}
    assert by["PLS, SFT students, same model judges"]["reproduces"] is True
    assert by["PLS, SFT students, inheritance judges"]["reproduces"] is False  # CI covers 0
    assert by["PLS, ICL students, same model judges"]["reproduces"] is True  # no leakage, as in the paper
    assert by["PLS, ICL students, same model judges"]["paper_value"].startswith("-2.7%")
    mit = lambda c, e, lo, hi: {"metric": "pls", "tier": "same", "condition": c, "estimate": e,  # noqa: E731
                                "ci_low": lo, "ci_high": hi, "n": 30}
    rows = robustness_paper_rows({
        "mitigation": [mit("plain", 0.5, 0.4, 0.6), mit("prompting", 0.45, 0.35, 0.55),
                       mit("paraphrase", 0.0, -0.1, 0.1), mit("contextual-calibration", 0.2, 0.1, 0.3)],
        "recognition": {"judges": [{"judge": "all related judges", "accuracy": 0.43, "ci_low": 0.41,
                                    "ci_high": 0.45, "n": 300, "chance": 0.5}], "classifier": []}})
    verdict = {r["figure"].split(",")[0]: r["reproduces"] for r in rows}
    assert verdict["PLS under prompting"] is True  # does not help, as in the paper
    assert verdict["PLS under paraphrase"] is False  # ours lowers it...
    assert "by construction" in next(r for r in rows if "paraphrase" in r["figure"])["differs"]  # ...by design
    assert verdict["PLS under contextual-calibration"] is True  # helps, as in the paper
    assert verdict["related judges picking their own student's response"] is True  # no better than chance


def test_the_mitigation_rows_set_error_bias_beside_pls_with_the_papers_figures():
    from judgeaudit.report.leakage_paper import EMBEDDED, MITIGATIONS, robustness_paper_rows, setting

    def mit(metric, c, e, lo, hi):
        return {"metric": metric, "tier": "same", "condition": c, "estimate": e, "ci_low": lo, "ci_high": hi,
                "n": 30}
    table = [mit(m, c, 0.3, 0.2, 0.4) for m in ("pls", "error_bias") for c in MITIGATIONS]
    table[-1] = mit("error_bias", "contextual-calibration", 0.05, -0.05, 0.15)  # below plain's CI
    table.append(mit("error_bias", "plain", 0.9, 0.8, 1.0) | {"tier": "inheritance"})  # another tier: no row
    real = setting(["gen-qwen", "gen-gemma"], ["student-qwen"], embedded=False)
    rows = robustness_paper_rows({"mitigation": table}, real, rewriter="unrelated")
    eb = [r for r in rows if r["figure"].startswith("Error Bias")]
    assert [r["figure"].split(" under ")[1].split(",")[0] for r in eb] == [
        "plain judging", *MITIGATIONS[1:]]  # the paper's six rows, in its order
    by = {r["figure"].split(",")[0]: r for r in rows}
    assert by["Error Bias under plain judging"]["reproduces"] is True  # CI above 0: the related judges lean
    assert by["Error Bias under plain judging"]["paper_value"] == "17.8"
    assert by["Error Bias under contextual-calibration"]["reproduces"] is True  # below plain, as the paper
    assert by["Error Bias under prompting"]["reproduces"] is True  # no help, as in the paper
    assert by["Error Bias under chain-of-thought"]["paper_value"] is None  # not quoted: blank, not invented
    assert all("student-qwen" in r["differs"] and EMBEDDED not in r["differs"] for r in rows)
    paraphrase = by["Error Bias under paraphrase"]["differs"]
    assert "unrelated" in paraphrase and "by construction" not in paraphrase  # by an LLM, as the paper
