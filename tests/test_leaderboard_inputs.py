"""Drills for the AlpacaEval reader, ``judgeaudit leaderboard`` and the published boards
on corrupted copies of the sample (tests/data/alpacaeval): a repeated annotation is a
counted, named rejection that leaves every figure as it was; a conflicting one, an empty
model file, non-UTF-8 text or a broken board is an error naming the file and the record."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from flows.cli import main
from judgeaudit.audits.win_rates import preferences, raw_win_rates
from judgeaudit.sources import read_source
from judgeaudit.tables import InputError
from tests.conftest import ROOT

SAMPLE = ROOT / "tests" / "data" / "alpacaeval"
MODEL_A = "model-a.annotations.json.gz"
REAL_BOARDS = ROOT.parent / "shared" / "data" / "alpacaeval" / "judge_leaderboards"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "alpacaeval"
    shutil.copytree(SAMPLE, folder)
    return folder


def _records(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


def _write(path: Path, records: list[dict]) -> None:
    path.write_bytes(gzip.compress(json.dumps(records).encode("utf-8")))


def _win_rate(folder: Path, model: str) -> float:
    table, _ = read_source("alpacaeval", folder)
    rates = raw_win_rates(preferences(table)).set_index("model")
    return float(rates.loc[model, "win_rate"])


def test_an_exact_duplicate_is_a_counted_named_rejection_and_no_figure_moves(tmp_path):
    folder = _copy(tmp_path)
    records = _records(folder / MODEL_A)
    _write(folder / MODEL_A, records + [records[3]])
    table, report = read_source("alpacaeval", folder)
    file = next(f for f in report.files if f.path.endswith(MODEL_A))
    assert sum(file.rejected.values()) == 1 and "duplicate" in next(iter(file.rejected))
    assert any(MODEL_A in n and "annotation 30" in n and "annotation 3 " in n for n in report.notes)
    assert _win_rate(folder, "model-a") == _win_rate(SAMPLE, "model-a")
    assert len(table) == len(read_source("alpacaeval", SAMPLE)[0])


def test_a_duplicate_across_two_files_of_one_model_is_counted_once(tmp_path):
    folder = _copy(tmp_path)
    records = _records(folder / MODEL_A)
    (folder / "model-a.annotations.json").write_text(json.dumps(records[:2]), encoding="utf-8")
    table, report = read_source("alpacaeval", folder)
    assert report.summary()["rows_rejected"] == 1 + 2  # the sample's own bad preference, and the two repeats
    assert _win_rate(folder, "model-a") == _win_rate(SAMPLE, "model-a")


def test_a_conflicting_duplicate_is_an_error_naming_both_records(tmp_path):
    folder = _copy(tmp_path)
    records = _records(folder / MODEL_A)
    _write(folder / MODEL_A, records + [{**records[3], "preference": 2.0}])
    with pytest.raises(InputError) as err:
        read_source("alpacaeval", folder)
    message = str(err.value)
    assert message.count(MODEL_A) == 2 and "annotation 30" in message and "annotation 3" in message
    assert "preference" in message and records[3]["instruction"][:30] in message


def test_the_leaderboard_command_reports_a_duplicate_and_refuses_a_conflict(tmp_path, capsys):
    folder = _copy(tmp_path)
    records = _records(folder / MODEL_A)
    _write(folder / MODEL_A, records + [records[3]])
    assert main(["leaderboard", "--path", str(folder), "--out", str(tmp_path / "lb"), "--n-boot", "50",
                 "--lc-cv", "exact", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{MODEL_A}: 30 rows read, skipped: 1 duplicate" in out and "annotation 30" in out
    _write(folder / MODEL_A, records + [{**records[3], "output_2": "another answer"}])
    assert main(["leaderboard", "--path", str(folder), "--out", str(tmp_path / "lb2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "output_2" in err and MODEL_A in err
    assert not (tmp_path / "lb2").exists()


def test_a_model_file_holding_an_empty_list_is_an_error(tmp_path, capsys):
    folder = _copy(tmp_path)
    _write(folder / MODEL_A, [])
    assert main(["leaderboard", "--path", str(folder), "--out", str(tmp_path / "lb")]) == 2
    err = capsys.readouterr().err
    assert MODEL_A in err and "no annotation" in err and err.count("\n") == 1
    assert not (tmp_path / "lb").exists()


def test_a_model_file_whose_every_annotation_is_rejected_is_an_error(tmp_path):
    folder = _copy(tmp_path)
    _write(folder / MODEL_A, [{**r, "preference": None} for r in _records(folder / MODEL_A)])
    with pytest.raises(InputError, match=rf"{MODEL_A}: no annotation read \(30 preference missing"):
        read_source("alpacaeval", folder)


def test_a_non_utf8_annotation_file_is_an_error_naming_the_file_and_line(tmp_path):
    folder = _copy(tmp_path)
    text = json.dumps(_records(folder / MODEL_A), indent=1).encode("utf-8")
    broken = text.replace(b"Explain briefly", b"Explain \xff briefly", 1)
    (folder / MODEL_A).write_bytes(gzip.compress(broken))
    line = broken[: broken.index(b"\xff")].count(b"\n") + 1
    with pytest.raises(InputError, match=rf"{MODEL_A}: line {line}: not UTF-8 text"):
        read_source("alpacaeval", folder)
    (folder / MODEL_A).unlink()
    (folder / "model-a.annotations.json").write_bytes(broken)  # and uncompressed
    with pytest.raises(InputError, match=rf"model-a.annotations.json: line {line}: not UTF-8 text"):
        read_source("alpacaeval", folder)


BOARD = "name,win_rate,length_controlled_winrate,avg_length,link,samples\n" \
        "GPT-4 Preview,50.0,50.0,2049,,https://x/results/gpt4_1106_preview/model_outputs.json\n" \
        "Claude 3 Opus,29.1,40.5,1388,,https://x/results/claude-3-opus-20240229/model_outputs.json\n"


def test_a_broken_published_board_is_an_error_naming_the_file(tmp_path):
    from judgeaudit.sources.alpacaeval_boards import read_leaderboard_csv

    board = tmp_path / "board.csv"
    board.write_text(BOARD, encoding="utf-8")
    assert read_leaderboard_csv(board).model.tolist() == ["gpt4_1106_preview", "claude-3-opus-20240229"]
    board.write_bytes(BOARD.replace("Opus", "Op\xe9us").encode("latin-1"))
    with pytest.raises(InputError, match=r"board.csv: line 3: not UTF-8 text"):
        read_leaderboard_csv(board)
    board.write_text(BOARD + 'Mistral,"21.4,30\n', encoding="utf-8")  # a quote never closed
    with pytest.raises(InputError, match=r"board.csv: (row 3: )?not a readable CSV"):
        read_leaderboard_csv(board)
    board.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"board.csv: the file is empty"):
        read_leaderboard_csv(board)
    board.write_text(BOARD.splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"board.csv: no model"):
        read_leaderboard_csv(board)


@pytest.mark.skipif(not REAL_BOARDS.is_dir(), reason=f"{REAL_BOARDS} is absent (see SOURCES.md for the data)")
def test_the_real_boards_still_read():
    from judgeaudit.sources.alpacaeval_boards import read_leaderboard_csv

    for path in sorted(REAL_BOARDS.glob("*.csv")):
        assert len(read_leaderboard_csv(path)) >= 6
