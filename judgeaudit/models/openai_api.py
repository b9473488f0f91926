"""The ``openai`` backend: any OpenAI-compatible endpoint (``vllm serve``, ``judgeaudit
serve``, hosted APIs). Keys come from the environment only; the openai client retries
with exponential backoff; a thread pool bounds the requests in flight.

With ``chat_template: auto`` prompts go to the chat endpoint as one user message;
with a format string they go, formatted, to the completions endpoint, which is also
the only one that can give prompt log-probs (``echo``), as vLLM's does.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.special import logsumexp
from tqdm.auto import tqdm

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import ModelSpec


class EndpointError(RuntimeError):
    """The endpoint cannot give what the judging mode needs."""


def candidate_logprobs(top: dict[str, float], candidates: Sequence[str]) -> list[float]:
    """Log-probs of ``candidates`` from one position's top log-probs. A candidate missing
    as such takes its whitespace variants (" A" and "A": chat endpoints drop the space);
    one missing from the list altogether gets an upper bound: the probability mass the
    list leaves, shared among the missing candidates."""
    found: dict[str, float] = {}
    for c in candidates:
        hits = [top[c]] if c in top else [lp for tok, lp in top.items() if tok.strip() == c.strip()]
        if hits:
            found[c] = float(logsumexp(hits))
    missing = [c for c in candidates if c not in found]
    if missing:
        rest = max(1e-12, 1.0 - sum(math.exp(v) for v in top.values()))
        for c in missing:
            found[c] = math.log(rest / len(missing))
    return [found[c] for c in candidates]


class OpenAIModel(LanguageModel):
    """A model behind an OpenAI-compatible HTTP endpoint."""

    def __init__(self, spec: ModelSpec, name: str = "", progress: bool = False) -> None:
        super().__init__(spec, name)
        from openai import OpenAI

        key = os.environ.get(spec.api_key_env)
        if key is None and spec.base_url is None:
            raise EndpointError(f"model {self.name!r}: set the API key in ${spec.api_key_env} "
                                "(keys are read from the environment only)")
        self.client = OpenAI(api_key=key or "EMPTY", base_url=spec.base_url, max_retries=spec.max_retries,
                             timeout=spec.timeout_s)
        self.chat = spec.chat_template == "auto"
        self.progress = progress

    def format_prompt(self, prompt: str) -> str:
        return prompt if self.chat else self.spec.chat_template.format(prompt=prompt)

    def _map(self, fn: Callable, items: Sequence, desc: str) -> list:
        with ThreadPoolExecutor(max_workers=self.spec.concurrency) as pool:
            return list(tqdm(pool.map(fn, items), total=len(items), desc=f"{desc} [{self.name}]",
                             disable=not self.progress, leave=False))

    def _complete(self, prompt: str, **kw):
        if self.chat:
            return self.client.chat.completions.create(
                model=self.spec.path, messages=[{"role": "user", "content": prompt}], **kw).choices[0]
        kw = {("logprobs" if k == "top_logprobs" else k): v for k, v in kw.items() if k != "logprobs"}
        return self.client.completions.create(model=self.spec.path, prompt=prompt, **kw).choices[0]

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        def one(prompt: str) -> str:
            choice = self._complete(prompt, max_tokens=max_new_tokens, temperature=temperature, seed=seed)
            text = choice.message.content if self.chat else choice.text
            return (text or "").strip()
        return self._map(one, list(prompts), "generate")

    def _top_logprobs(self, prompt: str) -> dict[str, float]:
        choice = self._complete(prompt, max_tokens=1, temperature=0.0, logprobs=True,
                                top_logprobs=self.spec.top_logprobs)
        if choice.logprobs is None:
            raise EndpointError(f"{self.spec.base_url or 'api.openai.com'} gave no log-probs for "
                                f"{self.name!r}: use the generative judge mode for it")
        if self.chat:
            first = choice.logprobs.content[0]
            return {t.token: t.logprob for t in first.top_logprobs}
        return dict(choice.logprobs.top_logprobs[0])

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        tops = self._map(self._top_logprobs, list(prompts), "verdict")
        return np.array([candidate_logprobs(top, candidates) for top in tops]).reshape(len(prompts),
                                                                                        len(candidates))

    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        if self.chat:
            raise EndpointError(f"{self.name!r}: prompt log-probs need the completions endpoint; give "
                                "the spec a chat_template format string (the likelihood mode needs them)")
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")

        def one(pair: tuple[str, str]) -> tuple[float, int]:
            prompt, completion = pair
            completion = " " + completion if completion and not completion[0].isspace() else completion
            choice = self.client.completions.create(model=self.spec.path, prompt=prompt + completion,
                                                    max_tokens=0, echo=True, logprobs=0).choices[0]
            lp = choice.logprobs
            if lp is None or lp.text_offset is None:
                raise EndpointError(f"{self.spec.base_url} gave no prompt log-probs (echo) for {self.name!r}")
            picked = [v for off, v in zip(lp.text_offset, lp.token_logprobs)
                      if off >= len(prompt) and v is not None]
            return float(sum(picked)), len(picked)
        return np.array(self._map(one, list(zip(prompts, completions)), "score"), dtype=float).reshape(-1, 2)
