"""The vllm backend against the transformers backend on the same checkpoint. vLLM needs
a CUDA machine: on CPU machines (CI) these tests skip, saying so."""

from __future__ import annotations

import numpy as np
import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed (it needs a CUDA machine: "
                                           "`pip install vllm` on a GPU worker)")
import torch  # noqa: E402  (a hard dependency; only CUDA may be missing)

if not torch.cuda.is_available():
    pytest.skip("vLLM is installed but no CUDA device is visible", allow_module_level=True)


def test_vllm_matches_transformers(tiny_lm):
    from judgeaudit.models import load_model

    spec = tiny_lm.spec.model_copy(update={"backend": "vllm", "dtype": "float32",
                                           "gpu_memory_utilization": 0.3})
    engine = load_model(spec, name="tiny-vllm")
    prompts = [tiny_lm.format_prompt(p) for p in ["What is 2 plus 3?", "What colour is snow?"]]
    np.testing.assert_allclose(engine.next_token_logprobs(prompts, [" A", " B"]),
                               tiny_lm.next_token_logprobs(prompts, [" A", " B"]), atol=2e-3)
    np.testing.assert_allclose(engine.completion_logprobs(prompts, ["Paris.", "white"]),
                               tiny_lm.completion_logprobs(prompts, ["Paris.", "white"]), atol=2e-3)
    assert engine.generate(prompts, max_new_tokens=8) == tiny_lm.generate(prompts, max_new_tokens=8)
