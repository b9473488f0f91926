"""Continuous batching of greedy decoding for a transformers causal LM: requests join the
running batch and leave it at step boundaries (iteration-level scheduling, as serving
engines do), so a request that arrives while others decode waits for one step, not for
the whole batch to end, and the forward passes keep running while the server answers
and reads requests.

The running batch keeps one KV cache (``DynamicCache``); rows are left-padded in it and
each keeps its own positions, so a row decodes exactly as it would alone (up to the
floating-point noise of batched kernels). Greedy means the arg-max of the model's raw
logits, which is what temperature 0 asks of an OpenAI-style endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from judgeaudit.models.hf import TransformersModel


@dataclass
class Row:
    """One request in the running batch: ``tag`` is the caller's handle for it."""

    tag: object
    max_tokens: int
    top_k: int = 0
    tokens: list[int] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)  # per token but end of sequence: token, logprob, top
    done: bool = False


def supports_continuous(lm: object) -> bool:
    """A decoder-only transformers model whose cache is plain per-layer key/value tensors
    (no sliding window): one whose rows can be padded and regrouped between steps."""
    config = getattr(getattr(lm, "model", None), "config", None)
    return (isinstance(lm, TransformersModel) and config is not None
            and not getattr(config, "is_encoder_decoder", False)
            and getattr(config, "sliding_window", None) is None)


def _left_pad(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    pad = [0, 0] * (t.dim() - 1 - dim % t.dim()) + [missing, 0]
    return F.pad(t, pad)


class RunningBatch:
    """The rows decoding together on one model: ``admit`` prefills new rows and merges
    them in, ``step`` decodes one token for every row, ``retire`` hands back finished rows."""

    def __init__(self, lm: TransformersModel) -> None:
        self.lm = lm
        self.eos = lm.tokenizer.eos_token_id
        self.rows: list[Row] = []
        self.cache = None  # DynamicCache over self.rows, left-padded
        self.mask: torch.Tensor | None = None  # (rows, width): 1 where the cache holds a real token
        self.last: torch.Tensor | None = None  # (rows,): the token each row feeds next
        self.positions: torch.Tensor | None = None  # (rows,): that token's position in its row

    def __len__(self) -> int:
        return len(self.rows)

    @torch.inference_mode()
    def admit(self, prompts: Sequence[str], rows: Sequence[Row]) -> None:
        """Prefill ``prompts`` (cut from the left to the context) and add their rows; each
        gets its first token from the prefill."""
        lm = self.lm
        ids, mask = lm._pad([e[-lm.spec.max_length:] for e in lm._encode(prompts)])
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = lm.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       logits_to_keep=1)
        cache = out.past_key_values
        if any(type(layer).__name__ != "DynamicLayer" for layer in cache.layers):
            raise RuntimeError(f"{lm.name or lm.spec.path}: continuous batching needs a plain dynamic "
                               "KV cache; serve this model with --max-batch 1")
        first = self._record(list(rows), out.logits[:, -1])
        if not self.rows:
            self.cache, self.mask, self.last = cache, mask, first
            self.positions = mask.sum(-1)
        else:
            width = max(self.mask.shape[1], mask.shape[1])
            for old, new in zip(self.cache.layers, cache.layers):
                old.keys = torch.cat([_left_pad(old.keys, width, -2), _left_pad(new.keys, width, -2)])
                old.values = torch.cat([_left_pad(old.values, width, -2), _left_pad(new.values, width, -2)])
            self.mask = torch.cat([_left_pad(self.mask, width, 1), _left_pad(mask, width, 1)])
            self.last = torch.cat([self.last, first])
            self.positions = torch.cat([self.positions, mask.sum(-1)])
        self.rows.extend(rows)

    @torch.inference_mode()
    def step(self) -> None:
        """One token for every row."""
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], dim=1)
        out = self.lm.model(input_ids=self.last[:, None], attention_mask=self.mask,
                            position_ids=self.positions[:, None], past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.positions = self.positions + 1
        self.last = self._record(self.rows, out.logits[:, -1])

    def drop(self, rows: Sequence[Row]) -> None:
        """Take ``rows`` out (their clients have gone) as if they had finished."""
        for row in rows:
            row.done = True

    def retire(self) -> list[Row]:
        """The rows that are done, removed from the batch (the cache shrinks with them)."""
        done = [row for row in self.rows if row.done]
        if not done:
            return []
        keep = [k for k, row in enumerate(self.rows) if not row.done]
        self.rows = [self.rows[k] for k in keep]
        if not keep:
            self.cache = self.mask = self.last = self.positions = None
            return done
        index = torch.tensor(keep, device=self.mask.device)
        self.mask, self.last, self.positions = self.mask[index], self.last[index], self.positions[index]
        start = int((self.mask.sum(0) > 0).nonzero()[0])  # columns that only the finished rows used
        self.mask = self.mask[:, start:]
        for layer in self.cache.layers:
            layer.keys, layer.values = layer.keys[index, :, start:], layer.values[index, :, start:]
        return done

    def text(self, row: Row) -> str:
        return self.lm.tokenizer.decode(row.tokens, skip_special_tokens=True)

    def _record(self, rows: list[Row], logits: torch.Tensor) -> torch.Tensor:
        """Append each row's greedy token (and its log-prob and top alternatives); returns the tokens."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        tokens = logits.argmax(-1)
        for row, lp, tok in zip(rows, logp, tokens.tolist()):
            row.tokens.append(tok)
            if tok == self.eos:  # as generate: the end of sequence ends the row and is not a step
                row.done = True
                continue
            top = torch.topk(lp, k=min(row.top_k, lp.shape[-1])) if row.top_k else None
            row.steps.append({"token": self.lm.tokenizer.decode([tok]), "logprob": float(lp[tok]),
                              "top": {} if top is None else dict(zip(self.lm._token_text(top.indices.tolist()),
                                                                     top.values.tolist()))})
            row.done |= len(row.tokens) >= row.max_tokens
        return tokens
