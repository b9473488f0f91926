"""Continuous batching of decoding for a transformers causal LM: requests join the
running batch and leave it at step boundaries (iteration-level scheduling, as serving
engines do), so a request that arrives while others decode waits for one step, not for
the whole batch to end, and the forward passes keep running while the server answers
and reads requests.

The running batch keeps one KV cache (``DynamicCache``); rows are left-padded in it and
each keeps its own positions, so a row decodes exactly as it would alone (up to the
floating-point noise of batched kernels). Its layers hold their keys and values in buffers
sized, when rows join or leave, for the longest of them to finish: a decoding step writes
its token in place, where the dynamic cache would copy the whole cache (``torch.cat``,
which took 40% of a step at 16 rows). A one-entry prefix cache keeps the keys and values
of the last prompt prefilled without a hit: the tokens later prompts share with it (a
judge template's opening) are not computed again. Greedy means the arg-max of the model's
raw logits, which is what temperature 0 asks of an OpenAI-style endpoint. A sampled row
draws as ``generate`` does (softmax of the logits over the temperature, no top-k or top-p
cut), from a generator of its own: what it draws does not depend on the other rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers.cache_utils import DynamicCache, DynamicLayer

from judgeaudit.models.hf import TransformersModel


@dataclass
class Row:
    """One request in the running batch: ``tag`` is the caller's handle for it; a row with
    a ``temperature`` above 0 samples, drawing from ``generator``."""

    tag: object
    max_tokens: int
    top_k: int = 0
    temperature: float = 0.0
    generator: torch.Generator | None = None
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


class SlabLayer(DynamicLayer):
    """A cache layer whose keys and values are views of preallocated buffers: ``update``
    writes the new positions in place (and doubles the buffers if they are full)."""

    def __init__(self, parts: Sequence[tuple[torch.Tensor, torch.Tensor]], capacity: int) -> None:
        """The rows of ``parts`` ((keys, values) of some rows each) stacked, every part
        left-padded with zeros to the widest, in buffers of ``capacity`` positions."""
        super().__init__()
        k0 = parts[0][0]
        self.dtype, self.device, self.is_initialized = k0.dtype, k0.device, True
        self.length = max(k.shape[-2] for k, _ in parts)
        shape = (sum(k.shape[0] for k, _ in parts), k0.shape[1], max(capacity, self.length), k0.shape[-1])
        self._k, self._v = k0.new_empty(shape), k0.new_empty(shape)
        row = 0
        for k, v in parts:  # one copy into place; the padding must be zeros (0 x garbage can be NaN)
            rows, pad = slice(row, row + k.shape[0]), self.length - k.shape[-2]
            self._k[rows, :, :pad], self._v[rows, :, :pad] = 0, 0
            self._k[rows, :, pad:self.length], self._v[rows, :, pad:self.length] = k, v
            row += k.shape[0]
        self._view()

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        end = self.length + key_states.shape[-2]
        if end > self._k.shape[-2]:
            self._k = torch.cat([self._k, torch.empty_like(self._k)], dim=-2)
            self._v = torch.cat([self._v, torch.empty_like(self._v)], dim=-2)
        self._k[:, :, self.length:end] = key_states
        self._v[:, :, self.length:end] = value_states
        self.length = end
        self._view()
        return self.keys, self.values

    def select(self, index: torch.Tensor, start: int) -> None:
        """Keep the rows ``index`` and the positions from ``start`` on (one copy)."""
        # index_select: a sixth of the time of advanced indexing here
        self._k, self._v = self._k.index_select(0, index)[:, :, start:], self._v.index_select(0, index)[:, :, start:]
        self.length -= start
        self._view()

    def _view(self) -> None:
        self.keys, self.values = self._k[:, :, :self.length], self._v[:, :, :self.length]


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
        self.min_prefix = 8  # a shorter shared prefix is computed again
        self.prefix_ids: list[int] = []  # the cached prefix: the last prompt prefilled without one
        self.prefix_kv: list[tuple[torch.Tensor, torch.Tensor]] = []  # its keys and values, per layer
        self.reused_tokens = 0  # prompt tokens not computed again
        self.token_text: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.rows)

    @torch.inference_mode()
    def admit(self, prompts: Sequence[str], rows: Sequence[Row]) -> None:
        """Prefill ``prompts`` (cut from the left to the context) and add their rows; each
        gets its first token from the prefill. The tokens they share with the cached prefix
        are not computed again (``_shared``)."""
        lm = self.lm
        encoded = [e[-lm.spec.max_length:] for e in lm._encode(prompts)]
        shared = self._shared(encoded)
        ids, mask = lm._pad([e[shared:] for e in encoded])
        positions = (mask.cumsum(-1) - 1).clamp(min=0) + shared
        past = None
        if shared:  # the prefix's columns come first in every row, the suffixes left-padded after them
            past = DynamicCache()
            for k, v in self.prefix_kv:
                layer = DynamicLayer()
                layer.lazy_initialization(k, v)
                layer.keys = k[..., :shared, :].expand(len(encoded), -1, -1, -1)
                layer.values = v[..., :shared, :].expand(len(encoded), -1, -1, -1)
                past.layers.append(layer)
            mask = torch.cat([mask.new_ones((len(encoded), shared)), mask], dim=1)
            self.reused_tokens += shared * len(encoded)
        out = lm.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=past,
                       use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        if any(type(layer).__name__ != "DynamicLayer" for layer in cache.layers):
            raise RuntimeError(f"{lm.name or lm.spec.path}: continuous batching needs a plain dynamic "
                               "KV cache; serve this model with --max-batch 1")
        if not shared and len(encoded[0]) > self.min_prefix:
            columns = mask[0].nonzero()[:-1, 0]  # the first prompt but its last token
            self.prefix_ids = encoded[0][:-1]
            self.prefix_kv = [(layer.keys[:1, :, columns], layer.values[:1, :, columns]) for layer in cache.layers]
        first = self._record(list(rows), out.logits[:, -1])
        parts = [[(layer.keys, layer.values)] for layer in cache.layers]
        if not self.rows:
            self.mask, self.last, self.positions = mask, first, mask.sum(-1)
        else:
            width = max(self.mask.shape[1], mask.shape[1])
            parts = [[(old.keys, old.values)] + new for old, new in zip(self.cache.layers, parts)]
            self.mask = torch.cat([_left_pad(self.mask, width, 1), _left_pad(mask, width, 1)])
            self.last = torch.cat([self.last, first])
            self.positions = torch.cat([self.positions, mask.sum(-1)])
        self.rows.extend(rows)
        room = max(row.max_tokens - len(row.tokens) for row in self.rows)  # for every row to finish
        cache.layers = [SlabLayer(p, self.mask.shape[1] + max(room, 1)) for p in parts]
        self.cache = cache

    @torch.inference_mode()
    def step(self) -> None:
        """One token for every row."""
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], dim=1)
        attention = self.mask
        if self.lm.model.config._attn_implementation == "sdpa":  # the 4D mask SDPA takes, built here in
            attention = self.mask.bool()[:, None, None, :]       # one op (transformers' builder: 7% of a step)
        out = self.lm.model(input_ids=self.last[:, None], attention_mask=attention,
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
            layer.select(index, start)
        return done

    def _shared(self, encoded: list[list[int]]) -> int:
        """How many leading tokens every prompt shares with the cached prefix (0 under
        ``min_prefix``), leaving each at least one token to prefill."""
        if not self.prefix_ids:
            return 0
        n = min(len(self.prefix_ids), *(len(e) - 1 for e in encoded))
        for e in encoded:
            n = next((i for i in range(n) if e[i] != self.prefix_ids[i]), n)
        return n if n >= self.min_prefix else 0

    def text(self, row: Row) -> str:
        return self.lm.tokenizer.decode(row.tokens, skip_special_tokens=True)

    def _text(self, token: int) -> str:
        """One token's text, as ``tokenizer.decode([token])``, decoded once per token id."""
        if token not in self.token_text:
            self.token_text[token] = self.lm.tokenizer.decode([token])
        return self.token_text[token]

    def _record(self, rows: list[Row], logits: torch.Tensor) -> torch.Tensor:
        """Append each row's token, greedy or sampled (and its log-prob and top
        alternatives); returns the tokens."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        tokens = logits.argmax(-1)
        for k, row in enumerate(rows):
            if row.temperature > 0:  # as transformers' sampling: one (1, vocab) draw, in float32
                probs = torch.softmax(logits[k:k + 1].float() / row.temperature, dim=-1)
                tokens[k] = torch.multinomial(probs, 1, generator=row.generator)[0, 0]
        chosen = logp.gather(1, tokens[:, None])[:, 0].tolist()
        for k, (row, tok) in enumerate(zip(rows, tokens.tolist())):
            row.tokens.append(tok)
            if tok == self.eos:  # as generate: the end of sequence ends the row and is not a step
                row.done = True
                continue
            top = torch.topk(logp[k], k=min(row.top_k, logp.shape[-1])) if row.top_k else None
            row.steps.append({"token": self._text(tok), "logprob": chosen[k],
                              "top": {} if top is None else dict(zip(map(self._text, top.indices.tolist()),
                                                                     top.values.tolist()))})
            row.done |= len(row.tokens) >= row.max_tokens
        return tokens
