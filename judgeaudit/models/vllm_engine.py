"""The ``vllm`` backend: vLLM's offline engine on GPU workers (continuous batching,
prefix caching). Verdict and completion log-probs come from ``prompt_logprobs`` over
the prompt with the candidate appended, so they are exact whatever the tokenizer does,
and the shared prompt is computed once (prefix caching)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgeaudit.models.base import LanguageModel, apply_template
from judgeaudit.models.spec import ModelSpec, require_local


class VLLMModel(LanguageModel):
    """A checkpoint or hub id loaded into ``vllm.LLM``; never executes remote code."""

    def __init__(self, spec: ModelSpec, name: str = "", progress: bool = False) -> None:
        super().__init__(spec, name)
        try:
            from vllm import LLM
        except ImportError as exc:  # CPU machines: vLLM is a GPU worker's dependency
            raise ImportError("the vllm backend needs `pip install vllm` on a CUDA machine; "
                              "use backend: transformers elsewhere") from exc
        require_local(spec.path, f"model {name or spec.path!r}")
        self.llm = LLM(model=spec.path, dtype=spec.dtype, seed=0, trust_remote_code=False,
                       gpu_memory_utilization=spec.gpu_memory_utilization,
                       tensor_parallel_size=spec.tensor_parallel_size, enable_prefix_caching=True)
        self.tokenizer = self.llm.get_tokenizer()
        self.progress = progress

    def format_prompt(self, prompt: str) -> str:
        return apply_template(self.tokenizer, self.spec.chat_template, prompt)

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        from vllm import SamplingParams

        params = SamplingParams(temperature=temperature, max_tokens=max_new_tokens, seed=seed)
        outs = self.llm.generate(list(prompts), params, use_tqdm=self.progress)
        return [o.outputs[0].text.strip() for o in outs]

    def _sequence_logprobs(self, prefixes: list[list[int]], conts: list[list[int]]) -> np.ndarray:
        """Summed log-prob of each ``conts[i]`` after ``prefixes[i]``."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        seqs = [(p + c)[-self.spec.max_length:] for p, c in zip(prefixes, conts)]
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=s) for s in seqs], params,
                                 use_tqdm=self.progress)
        result = np.zeros(len(seqs))
        for i, (out, seq, cont) in enumerate(zip(outs, seqs, conts)):
            k = min(len(cont), len(seq) - 1)
            result[i] = sum(out.prompt_logprobs[pos][seq[pos]].logprob for pos in range(len(seq) - k, len(seq)))
        return result

    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")
        eos = self.tokenizer.eos_token_id
        conts = [c + ([eos] if eos is not None else []) for c in
                 self._encode([" " + c if c and not c[0].isspace() else c for c in completions])]
        sums = self._sequence_logprobs(self._encode(prompts), conts)
        return np.stack([sums, [len(c) for c in conts]], axis=1).astype(float)

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        cand = self._encode(candidates)
        if len({tuple(c) for c in cand}) != len(cand):
            raise ValueError(f"candidates {list(candidates)} share a first token for {self.name}")
        k = 0  # the shared prefix's probability cancels between candidates: skip it
        while all(len(c) > k + 1 for c in cand) and len({c[k] for c in cand}) == 1:
            k += 1
        encoded = [e + cand[0][:k] for e in self._encode(prompts)]
        return np.stack([self._sequence_logprobs(encoded, [c[k:]] * len(encoded)) for c in cand], axis=1)
