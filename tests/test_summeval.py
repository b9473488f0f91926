"""The SummEval reader on the real file when ../shared/data holds it (skips, saying why,
where it does not), and its errors on a malformed file."""

from __future__ import annotations

import json

import pytest

from judgeaudit.sources.summeval import FILE, summeval_items
from judgeaudit.tables import InputError
from tests.conftest import ROOT

SHARED = ROOT.parent / "shared" / "data" / "summeval"


@pytest.mark.skipif(not (SHARED / FILE).exists(),
                    reason=f"SummEval is not in {SHARED} (see ../shared/data/SOURCES.md)")
def test_real_summeval_file():
    frame = summeval_items(SHARED, aspect="relevance")
    assert len(frame) >= 1000  # 100 articles x 16 systems in the release
    assert frame.reference.between(1, 5).all() and frame.item_id.is_unique


def test_reader_names_file_line_and_field(tmp_path):
    good = {"id": "dm-test-1", "model_id": "M11", "text": "An article.", "decoded": "A summary.",
            "expert_annotations": [{"coherence": 2, "consistency": 5, "fluency": 4, "relevance": 3},
                                   {"coherence": 3, "consistency": 5, "fluency": 5, "relevance": 4}]}
    path = tmp_path / FILE
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "model_id": "M12"}) + "\n")
    frame = summeval_items(tmp_path, aspect="relevance")
    assert frame.reference.tolist() == [3.5, 3.5] and "An article." in frame.question[0]
    path.write_text(json.dumps(good) + "\n" + json.dumps({k: v for k, v in good.items() if k != "decoded"}))
    with pytest.raises(InputError, match=r"line 2: missing field 'decoded'"):
        summeval_items(path)
    with pytest.raises(InputError, match="unknown SummEval aspect"):
        summeval_items(path, aspect="style")


def test_score_range_takes_summeval_where_its_file_is(tmp_path, tiny_params_file):
    import yaml

    from judgeaudit.config import load_params
    from judgeaudit.stages.score_range import sources

    rec = {"id": "dm-test-1", "text": "An article.", "decoded": "A summary.",
           "expert_annotations": [{"coherence": 2, "consistency": 5, "fluency": 4, "relevance": 5}]}
    (tmp_path / FILE).write_text("".join(json.dumps({**rec, "model_id": f"M{k}"}) + "\n" for k in range(12)))
    raw = yaml.safe_load(tiny_params_file.read_text())
    raw["score_range"]["summeval"] = {"path": str(tmp_path), "n_items": None}
    tiny_params_file.write_text(yaml.safe_dump(raw))
    found, notes = sources(load_params(tiny_params_file))
    assert set(found) == {"embedded", "summeval"} and len(found["summeval"][0]) == 12
    assert found["summeval"][0].reference.eq(1.0).all()  # relevance 5 of 1-5, onto [0, 1]
    assert found["embedded"][0].reference.between(0, 1).all()
    raw["score_range"]["summeval"]["path"] = str(tmp_path / "absent")
    tiny_params_file.write_text(yaml.safe_dump(raw))
    found, notes = sources(load_params(tiny_params_file))
    assert set(found) == {"embedded"} and notes["summeval"].startswith("skipped: no SummEval file")
