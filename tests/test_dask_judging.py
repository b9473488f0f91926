"""Judging sharded over a real local Dask cluster (two worker processes) gives the same
verdicts as the single-process run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from tests.conftest import tiny_params

pytestmark = pytest.mark.slow


def _responses() -> pd.DataFrame:
    qs = ["What is 2 plus 3?", "What colour is snow?", "What is the capital of Peru?", "Add 4 and 9."]
    answers = {"gen-f": ["Certainly. **Answer:** 5", "**Answer:** white", "Certainly. Lima", "13"],
               "gen-t": ["5.", "White.", "Answer: Lima.", "It is 12."]}
    return pd.DataFrame([dict(student_id=f"student--{g}--{m}", student_base="student", generator=g, method=m,
                              prompt_id=f"e{k:05d}", prompt=q, response=answers[g][k])
                         for m in ("sft", "dpo") for g in answers for k, q in enumerate(qs)])


def _params(tmp_path, tiny_lm, scale: dict):
    params = tiny_params()
    names = {n for t in params["leakage"]["judges"].values() for n in t.values()} | {"gen-f", "gen-t", "student"}
    for name in names:  # every judge is the same real checkpoint, loaded from its spec
        params["models"][name] = {"spec": {"path": tiny_lm.spec.path, "chat_template": "Q: {prompt}\nA:"}}
    params["judge"]["modes"] = {"gen-t": "prompted", "sib-t": "prompted"}
    params["scale"] = scale
    path = tmp_path / f"params-{scale['runner']}.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def test_dask_sharded_judging_matches_single_process(tiny_lm, tmp_path):
    from judgeaudit.runner.execute import execute
    from judgeaudit.tables import write_table

    tables = {}
    for scale in ({"runner": "local"}, {"runner": "dask", "workers": 2, "shards_per_judge": 2}):
        root = tmp_path / scale["runner"]
        write_table(_responses(), root / "responses" / "responses.parquet")
        n = execute("judge", _params(tmp_path, tiny_lm, scale), root)
        tables[scale["runner"]] = pd.read_parquet(root / "judgments" / "judgments.parquet")
        assert n == 6 * 2 * 4 * 2  # judges x methods x prompts x orders
    local, dask = tables["local"], tables["dask"]
    assert set(local["mode"]) == {"likelihood", "prompted"}
    pd.testing.assert_frame_equal(local.drop(columns="p_a"), dask.drop(columns="p_a"))
    assert (local.p_a - dask.p_a).abs().max() < 1e-5
