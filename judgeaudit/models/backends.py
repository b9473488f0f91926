"""The built-in model backends, registered by name, and ``load_model``. Each loader
imports its backend's module only when a spec names it (the package's ``__init__``
imports this module, so the names are known wherever a spec is read). A new built-in
backend is its module and a loader here."""

from __future__ import annotations

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.registry import backend, register_loader
from judgeaudit.models.spec import ModelSpec


def load_model(spec: ModelSpec, name: str = "", progress: bool = False) -> LanguageModel:
    """Instantiate the backend ``spec.backend`` names."""
    return backend(spec.backend)(spec, name=name, progress=progress)


@register_loader("transformers")
def load_transformers() -> type[LanguageModel]:
    """Local checkpoints, CPU or GPU, batched (torch and transformers): the default."""
    from judgeaudit.models.hf import TransformersModel

    return TransformersModel


@register_loader("openai")
def load_openai() -> type[LanguageModel]:
    """Any OpenAI-compatible endpoint; its own spec fields: base_url, api_key_env,
    concurrency, max_retries, timeout_s, top_logprobs, response_cache."""
    from judgeaudit.models.openai_api import OpenAIModel

    return OpenAIModel


@register_loader("vllm")
def load_vllm() -> type[LanguageModel]:
    """vLLM's offline engine on GPU workers; its own spec fields: gpu_memory_utilization,
    tensor_parallel_size."""
    from judgeaudit.models.vllm_engine import VLLMModel

    return VLLMModel
