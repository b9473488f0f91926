"""The readers of recorded verdicts (PandaLM, LLMBar, generic) and of the other benchmark
files on corrupted copies of the test fixtures in tmp_path: a repeated record that is an
exact copy is a counted, named rejection and leaves every figure as it was; one that
differs is an error naming both records; a read that gives nothing is an error; a file
that is not UTF-8, a truncated CSV or a non-numeric field is an error naming the file, the
row and the field. Never a silent change of figures."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from judgeaudit.sources import read_source
from judgeaudit.tables import InputError
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "data"


def _json(path: Path):
    return json.loads(path.read_text())


def _write(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1))


def _pandalm(tmp_path: Path) -> Path:
    root = tmp_path / "pandalm"
    shutil.copytree(DATA / "pandalm", root)
    return root


def _llmbar(tmp_path: Path) -> Path:
    root = tmp_path / "llmbar"
    shutil.copytree(DATA / "llmbar", root)
    return root


# ---- item 12: repeated and conflicting records ------------------------------------------

def test_pandalm_repeated_idx_that_is_an_exact_copy_is_a_counted_rejection(tmp_path):
    root = _pandalm(tmp_path)
    before, _ = read_source("pandalm", root)
    testset = _json(root / "testset-v1.json")
    _write(root / "testset-v1.json", testset + [dict(testset[0])])
    table, report = read_source("pandalm", root)
    assert table.equals(before)  # the figures are as they were
    test_file = next(f for f in report.files if f.path.endswith("/testset-v1.json"))
    repeated = {reason: n for reason, n in test_file.rejected.items() if "duplicated idx" in reason}
    assert test_file.rows_read == len(testset) and list(repeated.values()) == [1]
    n = len(testset)
    assert any(f"record {n} repeats record 0 (idx 0)" in note for note in report.notes)


def test_pandalm_repeated_idx_that_differs_is_an_error_naming_both_records(tmp_path):
    root = _pandalm(tmp_path)
    testset = _json(root / "testset-v1.json")
    flipped = {**testset[0], "annotator1": 2, "annotator2": 2}  # today: item 0's label flips, rc 0
    _write(root / "testset-v1.json", testset + [flipped])
    with pytest.raises(InputError, match=rf"testset-v1.json: records 0 and {len(testset)} both have idx 0 "
                                         r"but differ \(field 'annotator1'"):
        read_source("pandalm", root)


def test_pandalm_judge_file_repeats(tmp_path):
    """A judge's verdict repeated exactly is counted; two different verdicts for one idx are an
    error naming both records, not the first kept."""
    root = _pandalm(tmp_path)
    path = root / "judge-x-testset-v1.json"
    records = _json(path)
    same = [r for k, r in enumerate(records) if r["idx"] not in {e["idx"] for e in records[:k]}]
    _write(path, same + [dict(same[0])])
    _, report = read_source("pandalm", root)
    judge = next(f for f in report.files if f.path.endswith("judge-x-testset-v1.json"))
    assert sum(judge.rejected.values()) == 1 and any("duplicated idx" in r for r in judge.rejected)
    _write(path, same + [{**same[0], "x_result": "2"}])
    with pytest.raises(InputError, match=rf"judge-x-testset-v1.json: records 0 and {len(same)} both have idx 0 "
                                         r"but differ \(field 'x_result'"):
        read_source("pandalm", root)


def test_pandalm_that_reads_nothing_is_an_error(tmp_path):
    root = _pandalm(tmp_path)
    (root / "judge-x-testset-v1.json").unlink()
    with pytest.raises(InputError, match=rf"{root}: no verdict read.*no judge file"):
        read_source("pandalm", root)
    _write(root / "testset-v1.json", [])
    with pytest.raises(InputError, match=r"testset-v1.json: no pairs"):
        read_source("pandalm", root)


def test_llmbar_exact_duplicate_pair_is_a_counted_rejection(tmp_path):
    root = _llmbar(tmp_path)
    before, _ = read_source("llmbar", root)
    natural = root / "Natural"
    dataset = _json(natural / "dataset.json")
    _write(natural / "dataset.json", dataset + [dataset[1]])
    results = sorted(natural.glob("evaluators/*/*/result.json"))
    for path in results:
        records = _json(path)
        _write(path, records + [records[1]])
    table, report = read_source("llmbar", root)
    assert table.equals(before)  # today: one more item, every count moves
    files = {f.path: f for f in report.files}  # counted per judge and strategy, as rows are
    for path in results:
        assert sum(files[str(path)].rejected.values()) == 1
        assert any("duplicated pair" in reason for reason in files[str(path)].rejected)
    n = len(dataset)
    assert any("Natural/dataset.json: 1 exact repeat" in note and f"record {n} repeats record 1" in note
               for note in report.notes)


def test_llmbar_repeated_pair_that_differs_is_an_error_naming_both_records(tmp_path):
    root = _llmbar(tmp_path)
    natural = root / "Natural"
    dataset = _json(natural / "dataset.json")
    other = {**dataset[1], "label": 3 - int(dataset[1]["label"])}
    _write(natural / "dataset.json", dataset + [other])
    for path in natural.glob("evaluators/*/*/result.json"):
        records = _json(path)
        _write(path, records + [{**records[1], "label": other["label"]}])
    n = len(dataset)
    with pytest.raises(InputError, match=rf"Natural/dataset.json: records 1 and {n} hold the same pair but differ "
                                         r"\(field 'label'"):
        read_source("llmbar", root)
    # the same pair twice in dataset.json, but the judge's two verdicts on it differ
    _write(natural / "dataset.json", dataset + [dataset[1]])
    vanilla = natural / "evaluators/JudgeA/Vanilla/result.json"
    records = _json(vanilla)
    twin = json.loads(json.dumps(records[1]))
    final = twin["results"][-1]
    final["swap = False"]["winner"] = {"1": "2", "2": "1"}.get(str(final["swap = False"]["winner"]), "1")
    for path in natural.glob("evaluators/*/*/result.json"):
        recs = _json(path)
        _write(path, recs[:n] + [twin if path == vanilla else recs[1]])
    with pytest.raises(InputError, match=rf"JudgeA/Vanilla/result.json: records 1 and {n} judge the same pair "
                                         r"but their verdicts differ"):
        read_source("llmbar", root)


def test_llmbar_that_reads_nothing_is_an_error(tmp_path):
    root = tmp_path / "llmbar"
    shutil.copytree(DATA / "llmbar" / "Natural", root / "Natural", ignore=shutil.ignore_patterns("evaluators"))
    with pytest.raises(InputError, match=rf"{root}: no verdict read \(no evaluators/"):
        read_source("llmbar", root)
    _write(root / "Natural" / "dataset.json", [])
    with pytest.raises(InputError, match=r"Natural/dataset.json: no pairs"):
        read_source("llmbar", root)


def test_generic_same_item_with_two_labels_is_an_error_naming_both_rows(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("item_id,judge,verdict,order,label\na,j1,1,1,1\na,j1,2,2,1\nb,j1,1,1,2\na,j2,1,1,2\n")
    with pytest.raises(InputError, match=r"v.csv: rows 1 and 4 give item 'a' different values of field 'label' "
                                         r"\('1' and '2'\)"):
        read_source("generic", path)
    other = tmp_path / "w.csv"  # across two files of a folder, with one source
    path.write_text("source,item_id,judge,verdict,label\ns,a,j1,1,1\n")
    other.write_text("source,item_id,judge,verdict,label\ns,a,j2,1,2\n")
    with pytest.raises(InputError, match=r"v.csv: row 1 and .*w.csv: row 1 give item 'a' different values"):
        read_source("generic", tmp_path)


def test_generic_repeated_verdicts(tmp_path):
    """An exact copy of a row is counted and named; two verdicts for one (item, judge,
    strategy, order) are an error naming both rows."""
    path = tmp_path / "v.jsonl"
    row = {"item_id": "x", "judge": "j", "verdict": "1", "label": "1"}
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, {**row, "item_id": "y"}, row)))
    table, report = read_source("generic", path)
    assert len(table) == 2 and report.files[0].rows_read == 2
    assert sum(report.files[0].rejected.values()) == 1 and any("duplicated verdict" in r
                                                               for r in report.files[0].rejected)
    assert any("row 3 repeats row 1" in note for note in report.notes)
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, {**row, "verdict": "2"})))
    with pytest.raises(InputError, match=r"v.jsonl: rows 1 and 2 give item 'x', judge 'j', strategy 'default', "
                                         r"order '1' different values of field 'verdict' \('1' and '2'\)"):
        read_source("generic", path)


# ---- item 13: errors that name the file -------------------------------------------------

def _not_utf8(path: Path, after: bytes) -> int:
    """Put an invalid UTF-8 byte after the first ``after``; its line number."""
    data = path.read_bytes()
    at = data.index(after) + len(after)
    path.write_bytes(data[:at] + b"\xff" + data[at:])
    return data[:at].count(b"\n") + 1


@pytest.mark.parametrize("source,relative,after", [
    ("pandalm", "testset-v1.json", b"Hello"),
    ("pandalm", "judge-x-testset-v1.json", b"greets"),
    ("llmbar", "Natural/dataset.json", b"output_1"),
    ("llmbar", "Natural/evaluators/JudgeA/Vanilla/result.json", b"winner"),
    ("generic", "verdicts.csv", b"Q2"),
    ("generic", "verdicts.jsonl", b"Q2"),
])
def test_non_utf8_input_names_the_file_and_line(tmp_path, source, relative, after):
    if source == "generic":
        root = tmp_path / "generic"
        root.mkdir()
        if relative.endswith(".csv"):
            shutil.copy(DATA / "generic" / "verdicts.csv", root)
        else:
            (root / relative).write_text('{"item_id": "a", "judge": "j", "verdict": "1", "prompt": "Q1"}\n'
                                         '{"item_id": "b", "judge": "j", "verdict": "1", "prompt": "Q2"}\n')
    else:
        root = _pandalm(tmp_path) if source == "pandalm" else _llmbar(tmp_path)
    line = _not_utf8(root / relative, after)
    with pytest.raises(InputError, match=rf"{relative}: line {line}: not UTF-8 text \(invalid start byte at "
                                         r"byte \d+\)"):
        read_source(source, root)


def test_truncated_csv_names_the_file_and_row(tmp_path):
    rows = "".join(f'i{k},j,1,"the judge wrote {k}, at length"\n' for k in range(1, 101))
    text = "item_id,judge,verdict,raw_output\n" + rows
    path = tmp_path / "v.csv"
    path.write_text(text[: text.index("i88,") + len('i88,j,1,"the judge')])  # cut inside a quoted field
    with pytest.raises(InputError, match=r"v.csv: row 88: malformed CSV \(.*EOF inside string"):
        read_source("generic", path)
    path.write_text(text.replace("i88,j,1,", "i88,j,1,extra,"))
    with pytest.raises(InputError, match=r"v.csv: row 88: malformed CSV \(.*Expected 4 fields"):
        read_source("generic", path)


@pytest.mark.parametrize("value", ['"high"', "true"])
def test_non_numeric_p_1_names_file_row_and_field(tmp_path, value):
    path = tmp_path / "v.jsonl"
    path.write_text('{"item_id": "a", "judge": "j", "verdict": "1", "p_1": 0.9}\n'
                    f'{{"item_id": "b", "judge": "j", "verdict": "1", "p_1": {value}}}\n')
    with pytest.raises(InputError, match=r"v.jsonl: row 2: field 'p_1' must be a probability in \[0, 1\], got"):
        read_source("generic", path)
    csv = tmp_path / "v.csv"
    csv.write_text("item_id,judge,verdict,p_1\na,j,1,0.9\nb,j,1,high\n")
    with pytest.raises(InputError, match=r"v.csv: row 2: field 'p_1' must be a probability in \[0, 1\], got 'high'"):
        read_source("generic", csv)


def test_the_cli_says_which_file_in_one_line(tmp_path, capsys):
    from flows.cli import main

    path = tmp_path / "v.csv"
    path.write_bytes(b"item_id,judge,verdict\na,j,1\nb\xff,j,1\n")
    assert main(["audit-verdicts", "--source", "generic", "--path", str(path), "--out", str(tmp_path / "out"),
                 "--no-pu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"judgeaudit: error: {path}: line 3: not UTF-8 text (invalid start byte at byte 29)"


def test_other_benchmark_files_not_utf8_name_the_file_and_line(tmp_path):
    from judgeaudit.sources.hh_rlhf import hh_rlhf_items
    from judgeaudit.sources.mcq_benchmarks import read_gsm8k, read_mmlu
    from judgeaudit.sources.summeval import summeval_items

    shutil.copytree(DATA / "gsm8k", tmp_path / "gsm8k")
    line = _not_utf8(tmp_path / "gsm8k" / "test.jsonl", b"question")
    with pytest.raises(InputError, match=rf"gsm8k/test.jsonl: line {line}: not UTF-8 text"):
        read_gsm8k(tmp_path / "gsm8k", 2, 0)
    shutil.copytree(DATA / "mmlu", tmp_path / "mmlu")
    target = sorted((tmp_path / "mmlu" / "test").glob("*.csv"))[0]
    line = _not_utf8(target, b"\n")
    with pytest.raises(InputError, match=rf"{target.name}: line {line}: not UTF-8 text"):
        read_mmlu(tmp_path / "mmlu", 2, 0)
    hh = tmp_path / "hh" / "test.jsonl.gz"
    hh.parent.mkdir()
    lines = (DATA / "hh-rlhf" / "test.jsonl").read_bytes().splitlines(keepends=True)
    hh.write_bytes(gzip.compress(b"".join(lines[:2]) + lines[2].replace(b"Human", b"Hum\xffan", 1)))
    with pytest.raises(InputError, match=r"test.jsonl.gz: line 3: not UTF-8 text"):
        hh_rlhf_items(hh.parent, 2, 0)
    hh.write_bytes(gzip.compress(b"".join(lines))[:-20])  # a download cut short
    with pytest.raises(InputError, match=r"test.jsonl.gz: not a complete gzip file"):
        hh_rlhf_items(hh.parent, 2, 0)
    summeval = tmp_path / "summeval.jsonl"
    summeval.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(InputError, match=r"summeval.jsonl: line 1: not UTF-8 text"):
        summeval_items(summeval)


# ---- the shipped data: the duplicate rules change no published figure ------------------

@pytest.mark.skipif(not (SHARED / "pandalm").is_dir(), reason=f"{SHARED / 'pandalm'} absent (shared data)")
def test_real_pandalm_has_no_repeated_idx():
    """PandaLM's test set holds 71 groups of pairs with the same instruction and responses
    but different model pairs (cmp_key) and idx: distinct records, all 999 read."""
    table, report = read_source("pandalm", SHARED / "pandalm")
    assert all(not f.rejected for f in report.files) and table.item_id.nunique() == 999
