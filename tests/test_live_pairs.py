"""A team's own labelled pairs, with no recorded verdict (``--data pairs=PATH``): read from
JSONL, CSV or Parquet in either column convention, bad rows named by file, row and field, and
judged beside a benchmark's pairs in one audit against ``serve`` on loopback."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from judgeaudit.judging.live_items import pairs_to_judge
from judgeaudit.sources.pairs import read_pairs
from judgeaudit.tables import InputError
from tests.conftest import ROOT

LLMBAR = ROOT / "tests" / "data" / "llmbar"
QUESTIONS = ["What is 2 plus 3?", "What is the capital of Peru?", "What colour is snow?", "Name a prime number."]


def _gold(folder, n: int = 8):
    """The same kind of gold set written twice: RewardBench-style JSONL (chosen, rejected) and
    a CSV with both responses and a label, the better one second on odd rows."""
    folder.mkdir(parents=True, exist_ok=True)
    chosen = [{"prompt": QUESTIONS[i % 4], "chosen": f"A full answer to it, number {i}.",
               "rejected": f"No idea ({i}).", "subset": "easy" if i % 2 else "hard"} for i in range(n)]
    (folder / "prefs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chosen))
    rows = [{"item_id": f"q{i}", "prompt": r["prompt"],
             "response_1": r["rejected"] if i % 2 else r["chosen"],
             "response_2": r["chosen"] if i % 2 else r["rejected"], "label": 2 if i % 2 else 1}
            for i, r in enumerate(chosen)]
    pd.DataFrame(rows).to_csv(folder / "gold.csv", index=False)
    return folder


def test_pairs_read_in_both_conventions_keep_their_labels_and_ids(tmp_path):
    table, report = read_pairs(_gold(tmp_path / "gold"))
    assert report.source == "pairs" and len(table) == 16
    prefs, gold = table[table.source == "prefs"], table[table.source == "gold"]
    assert set(prefs.label) == {"1"} and list(prefs.item_id) == [str(k) for k in range(1, 9)]
    assert list(gold.label) == ["1", "2"] * 4 and list(gold.item_id) == [f"q{i}" for i in range(8)]
    assert set(prefs.subset) == {"easy", "hard"} and set(gold.subset) == {"all"}
    # the better response is the same text whichever convention and column held it
    better = gold.apply(lambda r: r.response_1 if r.label == "1" else r.response_2, axis=1)
    assert list(better) == list(prefs.response_1)

    items, notes = pairs_to_judge([("pairs", str(tmp_path / "gold" / "gold.csv"))], limit=3, seed=7)
    assert len(items) == 3 and any("a seeded sample of 3 of its 8 pairs" in n for n in notes)
    again, _ = pairs_to_judge([("pairs", str(tmp_path / "gold" / "gold.csv"))], limit=3, seed=7)
    pd.testing.assert_frame_equal(items, again)


@pytest.mark.parametrize("rows, message", [
    ([{"prompt": "q", "response_1": "a", "response_2": "b", "label": "A"}],
     r"bad\.csv: row 1: field 'label' must be 1, 2 or tie, got 'A'"),
    ([{"prompt": "q", "response_1": "a", "response_2": "b", "label": 1},
      {"prompt": "q", "response_1": "", "response_2": "b", "label": 1}],
     r"bad\.csv: row 2: field 'response_1' is empty"),
    ([{"prompt": "q", "response_1": "a", "response_2": "b"}], r"bad\.csv: missing column 'label'"),
    ([{"prompt": "q", "answer": "a"}], r"bad\.csv: give columns response_1, response_2 and label, or chosen"),
    ([{"item_id": "x", "prompt": "q", "chosen": "a", "rejected": "b"},
      {"item_id": "x", "prompt": "q2", "chosen": "c", "rejected": "d"}],
     r"bad\.csv: rows 1 and 2 give the pair \['bad', 'all', 'x'\] twice"),
])
def test_a_bad_row_is_named_by_file_row_and_field(tmp_path, rows, message):
    path = tmp_path / "bad.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(InputError, match=message):
        read_pairs(path)


def test_audit_judge_judges_plain_pairs_beside_a_benchmarks_against_serve(tiny_lm, tmp_path):
    from flows.cli import main
    from tests.test_audit_judge_calls import Server

    os.environ.setdefault("OPENAI_API_KEY", "unused-on-loopback")
    gold = _gold(tmp_path / "gold") / "prefs.jsonl"
    server = Server(tiny_lm)
    server.start()
    try:
        out = tmp_path / "out"
        answered = server.reset()
        assert main(["audit-judge", "--judge", "openai:tiny", "--base-url", server.url,
                     "--data", f"pairs={gold}", "--data", f"llmbar={LLMBAR}", "--limit", "5",
                     "--mode", "likelihood", "--prompt-format", "Q: {prompt}\nA:", "--biases", "verbosity",
                     "--n-boot", "200", "--out", str(out), "--params", "none.yaml"]) == 0
        sent = len(answered)
    finally:
        server.stop()
    verdicts = pd.read_parquet(out / "verdicts.parquet")
    pairs = verdicts.drop_duplicates(["source", "subset", "item_id"])
    assert (pairs.source == "prefs").sum() == 5 and (pairs.source != "prefs").sum() == 5
    assert set(verdicts.loc[verdicts.source == "prefs", "label"]) == {"1"}
    assert set(verdicts.order) == {"1", "2"} and len(verdicts) == 2 * len(pairs)
    summary = json.loads((out / "summary.json").read_text())
    assert sent > 0 and summary["calls"]["sent"] == sent  # the server's own count: each call sent once
