"""The ``transformers`` backend: local checkpoints or hub ids, CPU or GPU, batched."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from judgeaudit.models.base import LanguageModel, apply_template
from judgeaudit.models.chat import render_chat
from judgeaudit.models.spec import ModelSpec, require_local
from judgeaudit.precision import scoring

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def _sampling(temperature: float) -> dict:
    """``generate`` kwargs: greedy at temperature 0, else pure sampling (no top-k cut)."""
    return {"do_sample": True, "temperature": temperature, "top_k": 0} if temperature > 0 else {"do_sample": False}


_CHARS_PER_TOKEN = 5  # BPE vocabularies average 2-4.5 characters per token (shorter: whole text)
_CUT_MARGIN = 16


def _word_start(text: str, at: int) -> int:
    """The start of the first space-separated word at or after ``at`` (a space between two
    non-space characters), or 0 where there is none."""
    i = text.find(" ", max(at, 1))
    while i != -1 and i + 1 < len(text):
        if not text[i - 1].isspace() and not text[i + 1].isspace():
            return i
        i = text.find(" ", i + 1)
    return 0


def _batches(order: np.ndarray, size: int) -> Iterator[np.ndarray]:
    for start in range(0, len(order), size):
        yield order[start:start + size]


class TransformersModel(LanguageModel):
    """A causal LM loaded with ``AutoModelForCausalLM``; never executes remote code."""

    def __init__(self, spec: ModelSpec, name: str = "", progress: bool = False) -> None:
        super().__init__(spec, name)
        self.device = _device(spec.device)
        require_local(spec.path, f"model {name or spec.path!r}")
        self.tokenizer = AutoTokenizer.from_pretrained(spec.path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        dtype = "auto" if spec.dtype == "auto" else _DTYPES[spec.dtype]
        self.model = AutoModelForCausalLM.from_pretrained(spec.path, dtype=dtype).to(self.device)
        self.model.train(False)  # inference mode (dropout off)
        self.progress = progress
        self._scored: dict[tuple[str, str], tuple[float, int]] = {}  # completion_logprobs' memo
        self.memo_size = 200_000

    # -- prompts -------------------------------------------------------------------
    def format_prompt(self, prompt: str) -> str:
        return apply_template(self.tokenizer, self.spec.chat_template, prompt)

    def format_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """A whole conversation as one prompt (``judgeaudit.models.chat``): one user message
        gives ``format_prompt``'s text; a conversation the chat template refuses is a
        ``ChatError``."""
        return render_chat(self.tokenizer, self.spec.chat_template, messages)

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        texts = list(texts)  # one batched call: a fast tokenizer encodes them together
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []

    def _encode_last(self, texts: Sequence[str], keep: int) -> list[list[int]]:
        """``[e[-keep:] for e in self._encode(texts)]``, without encoding what is cut away: a
        text far longer than ``keep`` tokens (a 5-shot prompt) is encoded from a word start
        near its end. Tokenizers split words at spaces before BPE merges, so a cut there
        changes no token after the first word; the tail's first ``_CUT_MARGIN`` tokens are
        dropped all the same, and a tail too short to spare them falls back to the whole text.
        """
        texts, span = list(texts), keep * _CHARS_PER_TOKEN
        out: list[list[int] | None] = [None] * len(texts)
        cuts = {i: _word_start(t, len(t) - span) for i, t in enumerate(texts) if len(t) > 2 * span}
        cuts = {i: cut for i, cut in cuts.items() if cut > 0}
        for i, tail in zip(cuts, self._encode([texts[i][cut:] for i, cut in cuts.items()])):
            if len(tail) >= keep + _CUT_MARGIN:
                out[i] = tail[-keep:]
        rest = [i for i, e in enumerate(out) if e is None]
        for i, e in zip(rest, self._encode([texts[i] for i in rest])):
            out[i] = e[-keep:]
        return out  # type: ignore[return-value]

    def _pad(self, seqs: Sequence[list[int]], right: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Pad token lists into (input_ids, attention_mask) on the model's device: on the left
        (generation), or on the ``right`` (scoring)."""
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            if seq:
                at = slice(0, len(seq)) if right else slice(width - len(seq), width)
                ids[row, at] = torch.tensor(seq)
                mask[row, at] = 1
        return ids.to(self.device), mask.to(self.device)

    @torch.inference_mode()
    def _tail_logits(self, seqs: Sequence[list[int]], keep: Sequence[int]) -> list[torch.Tensor]:
        """Per sequence, the logits at its last ``keep[i]`` positions ([keep[i], vocab]).

        One batch padded on the right, with no attention mask: a row's padding comes after
        its tokens, where causal attention never looks from them, so the model runs its
        causal kernel alone (no padding mask to build and apply; scaled-dot-product
        attention skips the blocks above the diagonal) and positions count from 0 as they
        would unpadded. Against left padding with a mask (bench/right_padding.py, 16 rows,
        one CPU thread): 1.06x as fast at 256 tokens, 1.77x at 2048 with 30% less peak
        memory. The LM head runs on the last positions the batch needs only.
        """
        ids, _ = self._pad(seqs, right=True)
        width = ids.shape[1]
        span = min(width, max(width - len(s) + k for s, k in zip(seqs, keep)))
        with scoring(self.device):
            logits = self.model(input_ids=ids, logits_to_keep=span).logits.float()
        start = width - span  # the position logits[:, 0] is at
        return [logits[row, len(s) - k - start:len(s) - start] for row, (s, k) in enumerate(zip(seqs, keep))]

    @torch.inference_mode()
    def _tail_logprobs(self, seqs: Sequence[list[int]], n: Sequence[int]) -> list[float]:
        """Per sequence, the summed log-prob of its last ``n[i]`` tokens given the tokens before."""
        sums = []
        for seq, k, logits in zip(seqs, n, self._tail_logits(seqs, [k + 1 for k in n])):
            logp = torch.log_softmax(logits[:-1], dim=-1)
            target = torch.tensor(seq[len(seq) - k:], device=logp.device)
            sums.append(logp.gather(-1, target[:, None])[:, 0].sum())
        return torch.stack(sums).tolist()

    def _iter(self, n: int, lengths: Sequence[int], desc: str) -> Iterator[np.ndarray]:
        # longest first: similar lengths share a batch, and an out-of-memory shows at once
        order = np.argsort(-np.asarray(lengths), kind="stable")
        batches = list(_batches(order, self.spec.batch_size))
        return iter(tqdm(batches, desc=f"{desc} [{self.name}]", disable=not self.progress or n == 0,
                         leave=False))

    # -- primitives ------------------------------------------------------------------
    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        encoded = self._encode(prompts)
        out: list[str] = [""] * len(prompts)
        for batch in self._iter(len(prompts), [len(e) for e in encoded], "generate"):
            ids, mask = self._pad([encoded[i][-self.spec.max_length:] for i in batch])
            torch.manual_seed(seed)
            gen = self.model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.tokenizer.eos_token_id,
                **_sampling(temperature))
            texts = self.tokenizer.batch_decode(gen[:, ids.shape[1]:], skip_special_tokens=True)
            for i, text in zip(batch, texts):
                out[i] = text.strip()
        return out

    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        """As the base class says; each distinct (prompt, completion) is scored once per
        model instance: an audit that re-judges pairs under several conditions (attacks,
        ablations) scores the responses a condition leaves unchanged only the first time."""
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")
        keys = list(zip(prompts, completions))
        todo = list(dict.fromkeys(k for k in keys if k not in self._scored))
        if todo:
            for key, got in zip(todo, self._score([p for p, _ in todo], [c for _, c in todo])):
                self._scored[key] = (float(got[0]), int(got[1]))
        result = np.array([self._scored[k] for k in keys], dtype=float).reshape(len(keys), 2)
        if len(self._scored) > self.memo_size:  # bounded: oldest first out
            for key in list(self._scored)[:len(self._scored) - self.memo_size]:
                del self._scored[key]
        return result

    @torch.inference_mode()
    def _score(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        p_ids = self._encode_last(prompts, self.spec.max_length)
        c_ids = self._encode([" " + c if c and not c[0].isspace() else c for c in completions])
        eos = self.tokenizer.eos_token_id
        seqs = [(p + c + ([eos] if eos is not None else []))[-self.spec.max_length:]
                for p, c in zip(p_ids, c_ids)]
        n_scored = [min(len(c) + (eos is not None), len(s) - 1) for c, s in zip(c_ids, seqs)]
        result = np.zeros((len(prompts), 2))
        for batch in self._iter(len(seqs), [len(s) for s in seqs], "score"):
            sums = self._tail_logprobs([seqs[i] for i in batch], [n_scored[i] for i in batch])
            result[batch] = np.column_stack([sums, [n_scored[i] for i in batch]])
        return result

    def _continuation_logprobs(self, prompts: list[list[int]], cont: list[int]) -> np.ndarray:
        """Summed log-prob of the token sequence ``cont`` after each prompt."""
        seqs = [(p + cont)[-self.spec.max_length:] for p in prompts]
        out = np.zeros(len(seqs))
        for batch in self._iter(len(seqs), [len(s) for s in seqs], "score"):
            out[batch] = self._tail_logprobs([seqs[i] for i in batch], [len(cont)] * len(batch))
        return out

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        # Small vocabularies split " A" into " " + "A": score the first token where the
        # candidates differ, after their shared prefix (whose probability cancels out).
        # Where candidates tokenize unevenly (" A" one token, " C" two), score each
        # candidate's whole token sequence instead (one pass per candidate).
        cand = self._encode(candidates)
        if len({tuple(c) for c in cand}) != len(cand):
            raise ValueError(f"candidates {list(candidates)} share a first token for {self.name}")
        k = 0
        while all(len(c) > k for c in cand) and len({c[k] for c in cand}) == 1:
            k += 1
        encoded = self._encode_last(prompts, self.spec.max_length)
        if any(len(c) <= k for c in cand) or len({c[k] for c in cand}) != len(cand):
            return np.stack([self._continuation_logprobs(encoded, c) for c in cand], axis=1)
        shared, cand_ids = cand[0][:k], [c[k] for c in cand]
        encoded = [(e + shared)[-self.spec.max_length:] for e in encoded]
        result = np.zeros((len(prompts), len(candidates)))
        for batch in self._iter(len(encoded), [len(e) for e in encoded], "verdict"):
            last = torch.cat(self._tail_logits([encoded[i] for i in batch], [1] * len(batch)))
            result[batch] = torch.log_softmax(last, dim=-1)[:, cand_ids].cpu().numpy()
        return result

    # -- token-level views (what an OpenAI-compatible server returns) -----------------
    def _token_text(self, ids: Sequence[int]) -> list[str]:
        return [self.tokenizer.decode([i]) for i in ids]

    @torch.inference_mode()
    def echo_logprobs(self, text: str) -> tuple[list[str], list[float | None], list[int]]:
        """Each token of ``text``, its log-prob given the tokens before it (None for the
        first) and its character offset."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = enc["input_ids"][-self.spec.max_length:]
        offsets = [s for s, _ in enc["offset_mapping"]][-len(ids):]
        return self._echo_rows([ids], [offsets])[0]

    @torch.inference_mode()
    def echo_logprobs_batch(self, texts: Sequence[str]
                            ) -> list[tuple[list[str], list[float | None], list[int]]]:
        """``echo_logprobs`` of each text, all in one forward pass (what a server's scoring
        batcher runs). The batch is padded on the right (``_tail_logits``): causal attention
        never looks from a row's tokens to the padding after them, and their positions count
        from 0 as alone, so a row's log-probs do not depend on the other rows (to float
        rounding). Its logits take rows x longest x vocabulary floats: the caller sizes it."""
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True)
        seqs = [ids[-self.spec.max_length:] for ids in enc["input_ids"]]
        offsets = [[s for s, _ in spans][-len(ids):] for ids, spans in zip(seqs, enc["offset_mapping"])]
        return self._echo_rows(seqs, offsets)

    def _echo_rows(self, seqs: list[list[int]], offsets: list[list[int]]
                   ) -> list[tuple[list[str], list[float | None], list[int]]]:
        """(tokens, log-prob of each given those before it, offsets) of each token list."""
        out = []
        for ids, offs, logits in zip(seqs, offsets, self._tail_logits(seqs, [len(s) for s in seqs])):
            logp = torch.log_softmax(logits[:-1], dim=-1)
            picked = logp.gather(-1, torch.tensor(ids[1:], device=logp.device)[:, None])[:, 0].tolist()
            out.append((self._token_text(ids), [None, *picked], offs))
        return out

    def prompt_tokens(self, prompt: str) -> int:
        return len(self._encode([prompt])[0])

    @torch.inference_mode()
    def generate_with_logprobs(self, prompt: str, *, max_new_tokens: int, temperature: float = 0.0,
                               seed: int = 0, top_k: int = 0) -> tuple[str, list[dict]]:
        """One completion and, per generated token, its log-prob and the ``top_k`` most
        likely alternatives: [{"token", "logprob", "top": {token: logprob}}]."""
        return self.generate_batch_with_logprobs([prompt], [max_new_tokens], temperature=temperature,
                                                 seed=seed, top_k=top_k)[0]

    @torch.inference_mode()
    def generate_batch_with_logprobs(self, prompts: Sequence[str], max_new_tokens: Sequence[int], *,
                                     temperature: float = 0.0, seed: int = 0, top_k: int = 0,
                                     stop: Callable[[], Sequence[bool]] | None = None
                                     ) -> list[tuple[str, list[dict]]]:
        """``generate_with_logprobs`` for several prompts in one padded batch (what a
        server's dynamic batching runs): each row stops at its own ``max_new_tokens``, at
        its end of sequence, or when ``stop()`` says so for it (a client that has gone)."""
        from transformers import StoppingCriteria, StoppingCriteriaList

        ids, mask = self._pad([e[-self.spec.max_length:] for e in self._encode(prompts)])
        width, limits = ids.shape[1], torch.tensor(list(max_new_tokens), device=self.device)

        class _RowDone(StoppingCriteria):
            def __call__(self, input_ids: torch.Tensor, scores, **kw) -> torch.Tensor:
                done = (input_ids.shape[1] - width) >= limits
                if stop is not None:
                    done |= torch.tensor(list(stop()), dtype=torch.bool, device=input_ids.device)
                return done

        torch.manual_seed(seed)
        out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max(max_new_tokens),
                                  pad_token_id=self.tokenizer.pad_token_id,
                                  eos_token_id=self.tokenizer.eos_token_id, output_logits=True,
                                  return_dict_in_generate=True,
                                  stopping_criteria=StoppingCriteriaList([_RowDone()]), **_sampling(temperature))
        logps = torch.log_softmax(torch.stack(out.logits, dim=1).float(), dim=-1) if out.logits else None
        results = []
        for row, limit in enumerate(max_new_tokens):
            new = out.sequences[row, width:width + limit].tolist()
            eos = self.tokenizer.eos_token_id
            if eos in new:
                new = new[:new.index(eos) + 1]
            steps = []
            for k, tok in enumerate(new):
                logp = logps[row, k]
                top = torch.topk(logp, k=min(top_k, logp.shape[-1])) if top_k else None
                steps.append({"token": self.tokenizer.decode([tok]), "logprob": float(logp[tok]),
                              "top": {} if top is None else dict(zip(self._token_text(top.indices.tolist()),
                                                                     top.values.tolist()))})
            if new and new[-1] == eos:
                steps = steps[:-1]
            results.append((self.tokenizer.decode(new, skip_special_tokens=True), steps))
        return results
