"""Pairwise preferences from a reward model (comparison template, both orders) and from
a base LM zero-shot (softmax over the logits of "1" and "2")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.reward_input import padded, reward_ids
from judgeaudit.precision import scoring

COMPARISON = "Prompt: {q} Response1: {a1} Response2: {a2} Is response 1 better than response 2? A:"
ZERO_SHOT = ("Prompt: {q}\nResponse 1: {a1}\nResponse 2: {a2}\n"
             "Out of Response 1 and Response 2, the better response is Response")


def comparison_pair(q: str, chosen: str, rejected: str) -> dict:
    """The RM training example: the comparison with the chosen response first must
    outscore the one with the rejected response first."""
    return {"chosen": COMPARISON.format(q=q, a1=chosen, a2=rejected),
            "rejected": COMPARISON.format(q=q, a1=rejected, a2=chosen)}


class RewardScorer:
    """d(q, a1, a2) = S(q, a1, a2) - S(q, a2, a1) from a sequence-classification RM."""

    def __init__(self, path: str, device: str = "cpu", batch_size: int = 64, max_length: int = 256) -> None:
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(device).train(False)  # inference mode (dropout off)
        self.device, self.batch_size, self.max_length = device, batch_size, max_length
        self._seen: dict[str, float] = {}

    @torch.inference_mode()
    def rewards(self, texts: Sequence[str]) -> np.ndarray:
        """S(text) for each text. Each distinct text is scored once per scorer (the prefix
        matrices show the same comparison under many prefix pairs), longest first so that a
        batch pads little."""
        todo = sorted(set(texts) - self._seen.keys(), key=lambda t: (-len(t), t))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start:start + self.batch_size]
            ids = padded(self.tokenizer, [reward_ids(self.tokenizer, t, self.max_length) for t in batch])
            # padded on the right: causal attention alone keeps the padding out of every real
            # token's view, and the head reads the last token that is not padding (by the ids)
            with scoring(self.device):
                scores = self.model(input_ids=ids.to(self.device)).logits[:, 0].float()
            self._seen.update(zip(batch, scores.cpu().numpy().tolist()))
        return np.array([self._seen[t] for t in texts], dtype=float)

    def __call__(self, questions: Sequence[str], first: Sequence[str], second: Sequence[str]) -> np.ndarray:
        fwd = self.rewards([COMPARISON.format(q=q, a1=a, a2=b) for q, a, b in zip(questions, first, second)])
        bwd = self.rewards([COMPARISON.format(q=q, a1=b, a2=a) for q, a, b in zip(questions, first, second)])
        return fwd - bwd


class ZeroShotScorer:
    """d = logit P("1" | a1, a2) - logit P("1" | a2, a1) from a base LM."""

    def __init__(self, model: LanguageModel) -> None:
        self.model = model
        self._seen: dict[str, float] = {}

    def _p1(self, questions, first, second) -> np.ndarray:
        prompts = [ZERO_SHOT.format(q=q, a1=a, a2=b) for q, a, b in zip(questions, first, second)]
        todo = sorted(set(prompts) - self._seen.keys())  # each distinct prompt once, as in RewardScorer
        if todo:
            logp = self.model.next_token_logprobs(todo, [" 1", " 2"])
            self._seen.update(zip(todo, (logp[:, 0] - logp[:, 1]).tolist()))
        return np.array([self._seen[p] for p in prompts], dtype=float)

    def __call__(self, questions: Sequence[str], first: Sequence[str], second: Sequence[str]) -> np.ndarray:
        return self._p1(questions, first, second) - self._p1(questions, second, first)
