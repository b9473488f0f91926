"""The one model interface every role uses, whatever the backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from judgeaudit.models.spec import ModelSpec


def apply_template(tokenizer, template: str, prompt: str) -> str:
    """``template`` "auto": the tokenizer's chat template when it has one, else the plain
    "Q: ... A:" format; otherwise a format string with one {prompt} field."""
    if template == "auto":
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                 add_generation_prompt=True)
        template = "Q: {prompt}\nA:"
    return template.format(prompt=prompt)


class LanguageModel(ABC):
    """Generate text and score tokens; backends implement the batched primitives."""

    def __init__(self, spec: ModelSpec, name: str = "") -> None:
        self.spec = spec
        self.name = name or spec.path

    @abstractmethod
    def format_prompt(self, prompt: str) -> str:
        """The model-ready text for a bare user prompt (chat template applied)."""

    @abstractmethod
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        """Completions for formatted prompts; temperature 0 is greedy."""

    @abstractmethod
    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        """Array [n, 2]: summed log-prob of each completion given its prompt, and its token count."""

    @abstractmethod
    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Array [n, k]: log-prob of each candidate's first distinguishing token right
        after each prompt (one forward pass, no sampling), over the full vocabulary; where
        the candidates tokenize unevenly, of each candidate's whole token sequence."""
