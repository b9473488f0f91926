"""Drills for `judgeaudit pu-audit`'s input: every file is read and checked before the
encoder runs, a bad record stops the run naming file, line and field, and every skipped
or duplicated record and every missing judge file is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from flows.cli import main

SAMPLE = Path(__file__).parent / "data" / "judgebench"
PAIRS = "dataset=judgebench,response_model=m.jsonl"
JUDGE = "dataset=judgebench,response_model=m,judge_name=arena_hard,judge_model=j1.jsonl"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "judgebench"
    shutil.copytree(SAMPLE, folder)
    return folder


def _run(folder: Path, tmp_path: Path, capsys) -> tuple[int, str]:
    """The CLI with an encoder path that does not exist: an error about the input, not
    the encoder, shows that the input was checked before the encoder was built."""
    code = main(["pu-audit", "--judgebench", str(folder), "--out", str(tmp_path / "out"),
                 "--encoder", str(tmp_path / "no-encoder")])
    return code, capsys.readouterr().err


def _edit(path: Path, line: int, change) -> None:
    records = [json.loads(x) for x in path.read_text().splitlines()]
    change(records[line])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_pairs_record_without_label_names_file_line_and_field(tmp_path, capsys):
    folder = _folder(tmp_path)
    _edit(folder / PAIRS, 1, lambda r: r.pop("label"))
    code, err = _run(folder, tmp_path, capsys)
    assert code == 2 and f"{PAIRS}: line 2: missing field 'label'" in err and "Traceback" not in err
    assert "no-encoder" not in err and not (tmp_path / "out").exists()


def test_a_malformed_judge_file_is_reported_before_encoding(tmp_path, capsys):
    folder = _folder(tmp_path)
    with (folder / JUDGE).open("a") as f:
        f.write('{"pair_id": "p9", "judgments": [\n')
    code, err = _run(folder, tmp_path, capsys)
    assert code == 2 and JUDGE in err and "line 4" in err and "no-encoder" not in err


def test_duplicated_and_missing_records_are_reported(tmp_path, capsys):
    """A duplicated judge record is skipped and said; a missing judge file is a note. The
    run then stops at a broken encoder path, which proves the report came first."""
    folder = _folder(tmp_path)
    lines = (folder / JUDGE).read_text().splitlines()
    (folder / JUDGE).write_text("\n".join(lines + [lines[0]]) + "\n")
    (folder / "dataset=judgebench,response_model=m,judge_name=reward_model,judge_model=rm.jsonl").unlink()
    (folder / "dataset=judgebench,response_model=other.jsonl").write_text((folder / PAIRS).read_text())
    code, err = _run(folder, tmp_path, capsys)
    assert code == 2
    assert f"{JUDGE}: 6 rows read, skipped: 1 duplicated pair_id (first kept)" in err
    assert "note:" in err and "3 pairs of response model other have no judge file" in err
    assert err.index("skipped") < err.index("no-encoder")
