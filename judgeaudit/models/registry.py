"""Load a model by its spec, whatever the backend."""

from __future__ import annotations

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import BACKENDS, ModelSpec


def load_model(spec: ModelSpec, name: str = "", progress: bool = False) -> LanguageModel:
    """Instantiate the backend ``spec.backend`` names."""
    if spec.backend == "transformers":
        from judgeaudit.models.hf import TransformersModel

        return TransformersModel(spec, name=name, progress=progress)
    raise ValueError(f"unknown model backend {spec.backend!r}; known: {list(BACKENDS)}")
