"""Drills for the JudgeBench reader on corrupted copies of the sample (tests/data/judgebench):
an empty pairs or judge file, a judge record that disagrees with the pairs file, a
conflicting repeat, bad reward scores and non-UTF-8 text are errors naming the file, the
record and the field; a folder that gives no verdict is an error, never an empty audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flows.cli import main
from judgeaudit.sources import read_source
from judgeaudit.tables import InputError
from tests.conftest import ROOT

SAMPLE = ROOT / "tests" / "data" / "judgebench"
PAIRS = "dataset=judgebench,response_model=m.jsonl"
JUDGE = "dataset=judgebench,response_model=m,judge_name=arena_hard,judge_model=j1.jsonl"
RM = "dataset=judgebench,response_model=m,judge_name=reward_model,judge_model=rm.jsonl"
REAL = ROOT.parent / "shared" / "data" / "judgebench"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "judgebench"
    shutil.copytree(SAMPLE, folder)
    return folder


def _edit(path: Path, line: int, change) -> None:
    records = [json.loads(x) for x in path.read_text().splitlines()]
    change(records[line - 1])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _read(folder: Path):
    return read_source("judgebench", folder)


def test_an_empty_pairs_file_is_an_error_naming_it(tmp_path, capsys):
    folder = _copy(tmp_path)
    (folder / PAIRS).write_text("")
    with pytest.raises(InputError, match=rf"{PAIRS}: no pair"):
        _read(folder)
    # and the command that printed "judges: 0" figures before says one line, exit 2
    code = main(["audit-verdicts", "--source", "judgebench", "--path", str(folder),
                 "--out", str(tmp_path / "out"), "--no-pu"])
    err = capsys.readouterr().err
    assert code == 2 and PAIRS in err and err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_an_empty_judge_file_is_an_error_naming_it(tmp_path):
    folder = _copy(tmp_path)
    (folder / RM).write_text("\n")
    with pytest.raises(InputError, match=rf"{RM}: no verdict"):
        _read(folder)


def test_a_judge_label_that_disagrees_with_the_pairs_file_names_both_records(tmp_path):
    folder = _copy(tmp_path)
    _edit(folder / JUDGE, 2, lambda r: r.update(label="A>B"))  # the pairs file says B>A
    with pytest.raises(InputError) as err:
        _read(folder)
    message = str(err.value)
    assert f"{JUDGE}: line 2 (pair p2)" in message and f"{PAIRS}: line 2" in message
    assert "field 'label'" in message and "'A>B'" in message and "'B>A'" in message


def test_a_judge_response_that_differs_from_the_pairs_file_is_an_error(tmp_path):
    folder = _copy(tmp_path)
    _edit(folder / RM, 3, lambda r: r.update(response_B="print(3)"))
    with pytest.raises(InputError, match=rf"{RM}: line 3 \(pair p3\).*field 'response_B'.*{PAIRS}: line 3"):
        _read(folder)


def test_a_repeated_record_is_counted_and_a_conflicting_one_names_both_lines(tmp_path):
    folder = _copy(tmp_path)
    lines = (folder / JUDGE).read_text().splitlines()
    (folder / JUDGE).write_text("\n".join(lines + [lines[0]]) + "\n")
    table, report = _read(folder)
    file = next(f for f in report.files if f.path.endswith(JUDGE))
    assert dict(file.rejected) == {"duplicated pair_id (first kept)": 1} and len(table) == 12
    changed = json.loads(lines[0])
    changed["judgments"][0]["decision"] = "B>A"
    (folder / JUDGE).write_text("\n".join(lines + [json.dumps(changed)]) + "\n")
    with pytest.raises(InputError, match=rf"{JUDGE}: line 4 repeats pair p1 of line 1 with other judgments"):
        _read(folder)
    pairs = (folder / PAIRS).read_text().splitlines()
    other = json.loads(pairs[0])
    other["label"] = "B>A"
    (folder / PAIRS).write_text("\n".join(pairs + [json.dumps(other)]) + "\n")
    with pytest.raises(InputError, match=rf"{PAIRS}: line 4 repeats pair p1 of line 1 with other label"):
        _read(folder)


@pytest.mark.parametrize("scores, why", [('"[2.0, \\"a\\"]"', "'a'"), ('"[2.0"', "not JSON"),
                                         ("[1.0]", "two"), ("[1e999, 0]", "finite"), ('"NaN"', "two")])
def test_bad_reward_scores_name_file_line_and_field(tmp_path, scores, why):
    folder = _copy(tmp_path)
    _edit(folder / RM, 2, lambda r: r["judgments"][1]["judgment"].update(scores=json.loads(scores)))
    with pytest.raises(InputError) as err:
        _read(folder)
    message = str(err.value)
    assert f"{RM}: line 2 (pair p2): field 'judgments[1].judgment.scores'" in message and why in message


@pytest.mark.parametrize("name", [PAIRS, JUDGE])
def test_non_utf8_text_is_an_error_naming_the_file_and_line(tmp_path, name):
    folder = _copy(tmp_path)
    raw = (folder / name).read_bytes().replace(b'"2+2?"', b'"2+2\xe9?"')
    (folder / name).write_bytes(raw)
    with pytest.raises(InputError, match=rf"{name}: line 1: not UTF-8 text"):
        _read(folder)


def test_a_folder_with_pairs_but_no_judge_file_is_an_error(tmp_path):
    shutil.copy(SAMPLE / PAIRS, tmp_path)
    with pytest.raises(InputError, match=r"no judge verdict.*3 pairs of response model m have no judge file"):
        _read(tmp_path)


@pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent (see SOURCES.md for the data)")
def test_the_real_files_read_as_before():
    table, report = _read(REAL)
    assert len(table) == 6 * 700 and report.summary()["rows_rejected"] == 0
    claude = "claude-3-5-sonnet-20240620"
    assert report.notes == [f"{REAL}: the 270 pairs of response model {claude} have no judge file"]
