"""params.yaml's ``precision``: forward passes under bfloat16 autocast where the setting says
so, applied by every stage's entry and flow, named in the task cache's runtime and the report
(a bad setting, and its declaration in dvc.yaml: tests/test_dispatch.py, with cpu_dispatch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from judgeaudit import precision

ROOT = Path(__file__).resolve().parents[1]


def _params_with(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load((ROOT / "params.yaml").read_text()) | {"precision": value}))
    return path


def test_auto_follows_the_cpus_bfloat16_instructions(tmp_path):
    with_bf16, without = tmp_path / "bf16", tmp_path / "plain"
    with_bf16.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n\nprocessor\t: 1\n")
    without.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")
    assert precision.native_bf16(with_bf16) and not precision.native_bf16(without)
    assert precision.resolve("auto") == ("bfloat16" if precision.native_bf16() else "float32")
    assert precision.resolve("float32") == "float32" and precision.resolve("bfloat16") == "bfloat16"
    # the other dispatch settings hold the libraries to AVX2, where bfloat16 is emulated
    assert precision.resolve("auto", "compatible") == precision.resolve("auto", "avx2") == "float32"
    with pytest.raises(ValueError, match="'fp8'.*float32, bfloat16, auto"):
        precision.resolve("fp8")


def test_bfloat16_scores_close_to_float32_and_generates_the_same_texts(tiny_lm, monkeypatch):
    """The same checkpoint under each setting: bfloat16's log-probs differ in their last bits
    only, its weights stay float32, and its generated texts (greedy and sampled) are float32's
    to the token: generation is left out of the autocast."""
    from judgeaudit.models import load_model

    prompts = ["What is 2 plus 3?", "Name a colour.", "Which is larger, 7 or 9?"] * 3
    answers = ["5", "Blue is a colour.", "9 is larger than 7."] * 3
    seen = {}
    for way in ("float32", "bfloat16"):
        monkeypatch.setattr(precision, "_current", way)
        lm = load_model(tiny_lm.spec, name=way)  # its own memo of scores
        seen[way] = (lm.completion_logprobs(prompts, answers)[:, 0],
                     lm.generate(prompts[:3], max_new_tokens=12),
                     lm.generate(prompts[:3], max_new_tokens=12, temperature=1.0, seed=3))
        assert all(p.dtype == torch.float32 for p in lm.model.parameters())
    (a, greedy, sampled), (b, greedy_b, sampled_b) = seen["float32"], seen["bfloat16"]
    assert not np.array_equal(a, b)  # bfloat16 did run
    np.testing.assert_allclose(b, a, rtol=0.05, atol=0.5)
    assert np.array_equal(np.argsort(a), np.argsort(b))
    assert greedy == greedy_b and sampled == sampled_b


def test_bfloat16_embeddings_point_where_float32_ones_do(monkeypatch):
    """The PU audit's shipped encoder (all-MiniLM-L6-v2) under each setting."""
    from judgeaudit.models.encoder import Encoder

    texts = ["The capital of France is Paris.", "2 + 2 = 4", "Blue is the colour of the sky on a clear day.",
             "I strongly disagree with that opinion, and here is why."]
    encoder = Encoder()
    vectors = {}
    for way in ("float32", "bfloat16"):
        monkeypatch.setattr(precision, "_current", way)
        vectors[way] = encoder.embed(texts)
    a, b = vectors["float32"], vectors["bfloat16"]
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert not np.array_equal(a, b) and cosine.min() > 0.99


def test_a_library_call_outside_a_run_is_float32():
    probe = "from judgeaudit import precision; print(precision.current(), precision.mixed())"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["float32", "False"], done.stderr
    with pytest.raises(ValueError, match="precision 'half'"):
        precision.set_current("half")


def test_a_stage_runs_in_its_params_precision_as_do_its_workers_and_the_report_names_it(tmp_path):
    """The runner applies the params' precision to the stage's process (no environment
    variable carries it), hands it to each worker it starts, and the report's machine line
    names it; a worker's fork server started under another setting does not decide it."""
    from judgeaudit.config import load_params
    from judgeaudit.report.machine import machine
    from judgeaudit.runner.execute import load_params as stage_params
    from judgeaudit.stagekit.pool import Pool

    for way in ("bfloat16", "float32", "bfloat16"):
        path = _params_with(tmp_path, way)
        assert stage_params(path).precision == way == precision.current()
        assert machine()["precision"] == way
        with Pool("probe", workers=2) as pool:
            assert [pool.submit(precision.current).result() for _ in range(2)] == [way, way]
    assert load_params(path).precision == "bfloat16"


def test_bfloat16_under_a_capped_dispatch_is_refused_naming_both_settings(tmp_path):
    from judgeaudit.config import ConfigError, load_params

    path = _params_with(tmp_path, "bfloat16")
    path.write_text(path.read_text().replace("cpu_dispatch: default", "cpu_dispatch: compatible"))
    with pytest.raises(ConfigError, match=f"{path}.*precision: bfloat16 needs cpu_dispatch: default.*'compatible'"):
        load_params(path)

