"""Real MCQ benchmarks for BOAT: MMLU's and GSM8K's layouts are read into items (format
samples written for these tests in tests/data; the real files in ../shared/data when
present), each with its few-shot pool, and bad rows stop the read naming file, row and
field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judgeaudit.sources.mcq_benchmarks import gsm8k_answer, read_gsm8k, read_mmlu
from judgeaudit.tables import InputError

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_mmlu_items_spread_over_subjects_with_their_dev_shots():
    found = read_mmlu(DATA / "mmlu", n_items=8, seed=0)
    assert len(found.items) == 8 and found.groups.count("toy_physics") == found.groups.count("toy_history") == 4
    for item, group, pool in zip(found.items, found.groups, found.shot_pools):
        assert len(pool) == 5 and item not in pool  # the subject's dev items, never the test item
        assert ("SI unit of force" in pool[0].question) == (group == "toy_physics")
        assert item.gold in "ABCD" and len(set(item.options)) == 4
    assert read_mmlu(DATA / "mmlu", 8, 0).items == found.items  # seeded
    assert len(read_mmlu(DATA / "mmlu", 100, 0).items) == 10  # every test item, no more


def test_mmlu_bad_answer_names_file_row_and_field(tmp_path):
    root = tmp_path / "mmlu"
    shutil.copytree(DATA / "mmlu", root)
    bad = root / "test" / "toy_history_test.csv"
    bad.write_text(bad.read_text().replace("Rome,Athens,Sparta,Carthage,1", "Rome,Athens,Sparta,Carthage,7"))
    with pytest.raises(InputError, match=r"toy_history_test.csv: row 3: field 'answer' is 7"):
        read_mmlu(root, 8, 0)


def test_gsm8k_answers_become_four_way_items():
    assert gsm8k_answer("so 3 + 4 = 7\n#### 1,500") == 1500 and gsm8k_answer("#### 2.5") is None
    found = read_gsm8k(DATA / "gsm8k", n_items=5, seed=0)
    assert len(found.items) == 5 and all(len(pool) >= 3 for pool in found.shot_pools)
    answers = {1500, 7, 24, 45, 22, 72, 9, 120}
    assert all(int(item.options[item.answer]) in answers for item in found.items)


def test_gsm8k_bad_line_names_file_line_and_field(tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text((DATA / "gsm8k" / "test.jsonl").read_text() + '{"question": "q", "answer": "no number"}\n')
    with pytest.raises(InputError, match=r"line 9: field 'answer' does not end in '#### <integer>'"):
        read_gsm8k(path, 5, 0)


@pytest.mark.skipif(not (SHARED / "mmlu" / "test").is_dir() or not (SHARED / "gsm8k" / "test.jsonl").is_file(),
                    reason="../shared/data/mmlu or gsm8k absent (see ../shared/data/SOURCES.md)")
def test_the_real_files_read_whole():
    mmlu = read_mmlu(SHARED / "mmlu", n_items=114, seed=1)
    assert len(set(mmlu.groups)) == 57 and all(4 <= len(p) <= 5 for p in mmlu.shot_pools)  # 4-way items only
    gsm = read_gsm8k(SHARED / "gsm8k", n_items=50, seed=1)
    assert "of 1319 problems" in gsm.note
