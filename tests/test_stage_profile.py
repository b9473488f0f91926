"""bench/stage_profile.py: py-spy's samples sorted into kinds of work, the first mark in the
order given winning, and the temporary Prefect server of a cold stage left out."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import stage_profile  # noqa: E402

STAGE = 'process 10:"python -m flows.run boat"'
WORKER = 'process 12:"python -B -c from multiprocessing.forkserver import main"'
SERVER = 'process 11:"/venv/bin/python -m flows.server 1 2 http://127.0.0.1:1/api x.json"'


def _samples(tmp_path: Path) -> Path:
    stacks = {
        # a forward pass reached from an audit is a forward pass, not statistics
        f"{STAGE};{WORKER};predict (judgeaudit/audits/boat_eval.py:39);"
        "TransformersModel._tail_logits (judgeaudit/models/hf.py:123)": 30,
        f"{STAGE};{WORKER};sft (judgeaudit/training/trainers.py:108);Trainer.train (trainer.py:1576)": 20,
        # importing trl inside the trainers is an import, not training
        f"{STAGE};<module> (judgeaudit/training/trainers.py:15);_find_and_load (<frozen importlib._bootstrap>:1176)": 7,
        f"{STAGE};boat_summary (judgeaudit/audits/boat_eval.py:140);mean_ci (judgeaudit/audits/stats.py:53)": 5,
        f"{STAGE};run_until_complete (base_events.py:640)": 3,
        # the cold stage's own Prefect server: not the stage's work
        f"{STAGE};{SERVER};serve (uvicorn/server.py:70)": 100,
        f"{STAGE};{SERVER};_find_and_load (<frozen importlib._bootstrap>:1176)": 50,
    }
    path = tmp_path / "boat.txt"
    path.write_text("".join(f"{stack} {n}\n" for stack, n in stacks.items()))
    return path


def test_samples_go_to_the_first_kind_that_marks_them(tmp_path):
    counts = stage_profile.classify(_samples(tmp_path))
    assert counts == {"forward passes": 30, "training": 20, "imports": 7, "statistics": 5, "the rest": 3}


def test_the_table_gives_each_kind_its_share_and_the_total(tmp_path):
    counts = stage_profile.classify(_samples(tmp_path))
    text = stage_profile.table([("boat", 12.0, counts)], rate=10)
    header, _, row, total = text.splitlines()
    kinds = [c.strip() for c in header.strip("|").split("|")][3:]
    shares = dict(zip(kinds, [c.strip() for c in row.strip("|").split("|")][3:]))
    assert shares["forward passes"] == "46%" and shares["training"] == "31%" and shares["imports"] == "11%"
    assert row.startswith("| boat | 12 | 6 |")  # 65 samples at 10 a second
    assert total.startswith("| **all** | 12 | 6 |")
