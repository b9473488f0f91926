"""Model specs, the one model interface, its backends, and the embedded default's own models."""

from judgeaudit.models.backends import load_model  # registers the built-in backends
from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import ModelSpec

__all__ = ["LanguageModel", "ModelSpec", "load_model"]
