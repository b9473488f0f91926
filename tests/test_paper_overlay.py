"""params-gpu.yaml's score-range and prefix experiments run on CPU through the code path a
GPU run takes (``judgeaudit.runner.execute``): params-gpu.yaml's settings kept whole, tiny
local Llamas under its model names, transformers on CPU standing in for vLLM on CUDA; the
papers' rows carry our figures, and their "differs" text is the real models', not the
embedded default's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.params_file import read_params_file
from judgeaudit.report.paper_rows import read_paper_rows
from tests.tiny import ROOT

pytestmark = pytest.mark.slow
GPU = ROOT / "params-gpu.yaml"


def _smaller_llama(tiny_lm, out: Path) -> Path:
    """A second, smaller tiny Llama on the same tokenizer (the assistants' stand-in)."""
    from transformers import AutoTokenizer

    from judgeaudit.models.scratch import build_llama

    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    build_llama(tok, layers=1, hidden=16, heads=2, intermediate=32, max_positions=128, seed=1).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_the_gpu_overlay_runs_both_papers_on_cpu_and_writes_our_figures(tmp_path, tiny_lm):
    from judgeaudit.config import load_params
    from judgeaudit.runner.execute import execute

    small = _smaller_llama(tiny_lm, tmp_path / "small-llama")
    names = list(read_params_file(GPU).data["models"])
    local = {"backend": "transformers", "device": "cpu", "dtype": "float32", "chat_template": "Q: {prompt}\nA:",
             "max_length": 128}
    models = {name: {"spec": {**local, "path": str(small if name.startswith("asst-") else tiny_lm.spec.path)}}
              for name in names}
    overlay = tmp_path / "params-gpu-on-cpu.yaml"
    overlay.write_text(f"extends: {GPU}\nmodel_defaults: {{device: cpu, dtype: float32}}\n"
                       "scale: {runner: local, processes: 1}\nmodels: !replace\n"
                       + "".join(f"  {name}: {json.dumps(entry)}\n" for name, entry in models.items()))
    gpu, cpu = load_params(GPU), load_params(overlay)
    assert cpu.score_range == gpu.score_range and cpu.prefix == gpu.prefix  # the experiments as the GPU runs them
    assert {gpu.models[j.main].spec.backend for j in gpu.score_range.judges} == {"vllm"}
    assert gpu.prefix.aug_pairs == 3 and gpu.prefix.all_bases == ["student-qwen", "student-llama"]

    root = tmp_path / "data"
    execute("score_range", overlay, root)
    execute("prefix", overlay, root)

    rows = read_paper_rows(root / "score_range")
    assert {r["figure"].rsplit(", ", 1)[-1] for r in rows} == {"gen-qwen + asst-qwen", "gen-llama + asst-llama"}
    gain = [r for r in rows if r["figure"].startswith("CD gain")]
    assert len(gain) == 4 and all(r["paper_value"] and r["n"] == 540 for r in gain)  # 120 items x 5, 10% to dev
    excess = [r for r in rows if "excess" in r["figure"]]
    assert all(r["ours"] is not None and r["ci_low"] <= r["ours"] <= r["ci_high"] for r in excess)
    summary = json.loads((root / "score_range/summary.json").read_text())
    assert {f["assistant_smaller"] for f in summary["families"]} == {True}  # the smaller assistant, measured
    assert all(f["family_items"] == 0 for f in summary["families"])  # real judges: nothing planted, nothing trained

    rows = read_paper_rows(root / "prefix")
    tables = {r["table"] for r in rows}
    assert {"omega before augmentation", "omega after augmentation", "alpha before augmentation",
            "alpha after augmentation", "across architectures", "reward model accuracy"} <= tables
    arch = [r for r in rows if r["table"] == "across architectures"]
    assert {r["figure"].split("base ")[1].split(" ")[0] for r in arch} == {"student-qwen", "student-llama"}
    # 200 items, 30% tested: 60 pairs, 120 unique answers for omega
    assert all(r["n"] == (120 if r["table"].startswith("omega") else 60) for r in rows)
    assert all(r["ours"] is not None and r["ci_low"] <= r["ours"] <= r["ci_high"] for r in rows)
    for path in (root / "score_range", root / "prefix"):
        assert not any("tiny models" in r["differs"] for r in read_paper_rows(path))
        assert all("params-gpu.yaml" in r["overlay"] for r in read_paper_rows(path))
    summary = json.loads((root / "prefix/summary.json").read_text())
    assert summary["aug_pairs"] == 3 and summary["architectures"] == {"student-qwen": "llama", "student-llama": "llama"}
