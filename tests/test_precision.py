"""params.yaml's ``precision``: forward passes under bfloat16 autocast where the setting says
so, applied by every stage's entry and flow, named in the task cache's runtime and the report
(a bad setting, and its declaration in dvc.yaml: tests/test_dispatch.py, with cpu_dispatch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from prefect import flow, task

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
        monkeypatch.setenv(precision.VARIABLE, way)
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
        monkeypatch.setenv(precision.VARIABLE, way)
        vectors[way] = encoder.embed(texts)
    a, b = vectors["float32"], vectors["bfloat16"]
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert not np.array_equal(a, b) and cosine.min() > 0.99


def test_a_library_call_outside_a_run_is_float32(monkeypatch):
    monkeypatch.delenv(precision.VARIABLE, raising=False)
    assert precision.current() == "float32" and not precision.mixed()
    monkeypatch.setenv(precision.VARIABLE, "half")
    with pytest.raises(ValueError, match="JUDGEAUDIT_PRECISION='half'"):
        precision.current()


def test_a_stage_flows_params_apply_it_and_the_cache_and_report_name_it(tmp_path):
    path = _params_with(tmp_path, "bfloat16")
    probe = ("import json\n"
             "from flows.common import load_params\n"
             f"assert load_params({str(path)!r}).precision == 'bfloat16'\n"
             "from tasks.cache import runtime\n"
             "from judgeaudit.report.machine import machine\n"
             "print(json.dumps({'cache_env': runtime()['env'], 'report': machine()['precision']}))")
    env = {k: v for k, v in os.environ.items() if k != precision.VARIABLE} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], check=False, cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["cache_env"][precision.VARIABLE] == "bfloat16"  # a float32 result is not served
    assert seen["report"] == "bfloat16"


def test_every_stage_flow_applies_the_params_precision():
    """Each stage's flow starts from flows.common.load_params, which applies the precision:
    the report's too, which reads no other params but names the precision it ran under."""
    from flows.registry import STAGES

    for stage in STAGES:
        source = (ROOT / Path(*stage.module.split("."))).with_suffix(".py").read_text()
        assert "from flows.common import" in source and "load_params(params_path)" in source, stage.name


@task
def _precision_seen() -> str:
    return precision.current()


@flow
def _flow_under(params_path: str) -> list[str]:
    from flows.common import load_params
    from flows.runners import parallel

    params = load_params(params_path)  # what every stage's flow starts with
    with parallel(params.scale.model_copy(update={"processes": 2})) as runner:
        return [f.result() for f in [runner.submit(_precision_seen, {}) for _ in range(2)]]


def test_a_flow_run_directly_applies_its_params_precision_to_itself_and_its_workers(prefect_server, tmp_path):
    """As a deployment or a test runs a stage's flow: not through `python -m flows.run`. The
    workers take the run's setting even when the fork server was started under another."""
    for way in ("bfloat16", "float32", "bfloat16"):
        assert _flow_under(str(_params_with(tmp_path, way))) == [way, way]
        assert precision.current() == way


def test_bfloat16_under_a_capped_dispatch_is_refused_naming_both_settings(tmp_path):
    from judgeaudit.config import ConfigError, load_params

    path = _params_with(tmp_path, "bfloat16")
    path.write_text(path.read_text().replace("cpu_dispatch: default", "cpu_dispatch: compatible"))
    with pytest.raises(ConfigError, match=f"{path}.*precision: bfloat16 needs cpu_dispatch: default.*'compatible'"):
        load_params(path)

