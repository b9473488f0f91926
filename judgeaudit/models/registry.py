"""Load a model by its spec, whatever the backend."""

from __future__ import annotations

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import BACKENDS, ModelSpec


def load_model(spec: ModelSpec, name: str = "", progress: bool = False) -> LanguageModel:
    """Instantiate the backend ``spec.backend`` names."""
    if spec.backend == "transformers":
        from judgeaudit.models.hf import TransformersModel

        return TransformersModel(spec, name=name, progress=progress)
    if spec.backend == "openai":
        from judgeaudit.models.openai_api import OpenAIModel

        return OpenAIModel(spec, name=name, progress=progress)
    if spec.backend == "vllm":
        from judgeaudit.models.vllm_engine import VLLMModel

        return VLLMModel(spec, name=name, progress=progress)
    raise ValueError(f"unknown model backend {spec.backend!r}; known: {list(BACKENDS)}")
