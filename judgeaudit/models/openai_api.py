"""The ``openai`` backend: any OpenAI-compatible endpoint (``vllm serve``, ``judgeaudit
serve``, hosted APIs). Keys come from the environment only; the openai client retries
with exponential backoff; a thread pool bounds the requests in flight.

With ``chat_template: auto`` prompts go to the chat endpoint as one user message;
with a format string they go, formatted, to the completions endpoint, which is also
the only one that can give prompt log-probs (``echo``), as vLLM's does.

Faults: every endpoint failure becomes one EndpointError naming the model, the URL, the
status and what to do; the openai client retries what retrying can fix (connection
errors, timeouts, 429 and 5xx) with backoff; the first failure that survives its retries
cancels the requests not yet sent. With ``response_cache`` set, every complete answer
received is appended to a file there, so a rerun after a fault resumes where it stopped.

A reply that is not an answer (empty, content-filtered, truncated at max_tokens; verdict
log-probs that are NaN or positive, or hold none of the verdict tokens) is a failure:
counted by its reason in ``failures``, logged once per call, never cached (a rerun asks
again), and in the log-probability modes an unparseable verdict (NaN), never a tie.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp
from tqdm.auto import tqdm

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.spec import ModelSpec

log = logging.getLogger(__name__)

EMPTY = "empty reply"
FINISHED_EARLY = {"content_filter": "content-filtered (finish_reason content_filter)",
                  "length": "truncated (finish_reason length)"}
# a log-prob is at most 0; a little above it is the rounding of a log-softmax taken in low
# precision, far above it a broken endpoint
_LOGPROB_SLACK = 1e-4


class EndpointError(RuntimeError):
    """The endpoint failed, or cannot give what the judging mode needs; the message names
    the model, the URL and what to do."""


class _NotSent(Exception):
    """A request not sent because an earlier one had failed."""


class Failed(NamedTuple):
    """A reply that is not an answer: what it held, and why it is no answer."""

    value: object
    reason: str


def logprob_fault(values: Sequence[float]) -> str | None:
    """Why these log-probs cannot be read (NaN, or above 0: a probability above 1), or None."""
    if any(math.isnan(v) for v in values):
        return "NaN log-probs"
    if any(v > _LOGPROB_SLACK for v in values):
        return "positive log-probs (a probability above 1)"
    return None


def verdict_fault(top: dict[str, float], candidates: Sequence[str]) -> str | None:
    """Why one position's top log-probs give no verdict among ``candidates``, or None."""
    if fault := logprob_fault(list(top.values())):
        return fault
    if not any(c.strip() == tok.strip() for tok in top for c in candidates):
        names = " nor ".join(repr(c.strip()) for c in candidates)
        return f"{'neither' if len(candidates) == 2 else 'none of'} {names} among the top {len(top)} log-probs"
    return None


class ResponseCache:
    """Responses already received, appended one JSON line each (a line cut by a kill is
    skipped on reading), keyed by the request; thread-safe."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.values, self.lock = path, {}, threading.Lock()
        if path is not None and path.is_file():
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                    self.values[record["k"]] = record["v"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    @staticmethod
    def key(*parts) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def get(self, key: str):
        return self.values.get(key)

    def put(self, key: str, value) -> None:
        with self.lock:
            self.values[key] = value
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as f:
                    f.write(json.dumps({"k": key, "v": value}) + "\n")


def _advice(status: int | None) -> str:
    if status in (401, 403):
        return "check the API key in the key variable the spec names"
    if status == 404:
        return "check the model name (spec path) against the models the endpoint serves"
    if status == 429:
        return "rate limited even after retries: lower the spec's concurrency or retry later"
    if status is not None and status >= 500:
        return "the server failed even after retries: check its logs, then rerun (responses received are kept)"
    if status is not None:
        return "the endpoint refused the request: check the spec against what it accepts"
    return "check that the server is running and the spec's base_url is right, then rerun"


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
        self.url = spec.base_url or "https://api.openai.com/v1"
        self.chat = spec.chat_template == "auto"
        self.progress = progress
        self.failures: Counter[str] = Counter()  # replies that were no answer, by reason
        self._failures_lock = threading.Lock()
        self.cache = ResponseCache(Path(spec.response_cache) / f"{ResponseCache.key(self.url, spec.path)[:16]}.jsonl"
                                   if spec.response_cache else None)

    def format_prompt(self, prompt: str) -> str:
        return prompt if self.chat else self.spec.chat_template.format(prompt=prompt)

    def _map(self, fn: Callable, items: Sequence, desc: str) -> list:
        """``fn`` over ``items`` with at most ``concurrency`` in flight; the first failure
        cancels what has not started and is raised alone."""
        failed_once = threading.Event()

        def guarded(item):
            # checked in the worker itself: a worker freed by the failure would otherwise
            # send the next request before the caller wakes up to cancel it
            if failed_once.is_set():
                raise _NotSent
            try:
                return fn(item)
            except BaseException:
                failed_once.set()
                raise

        pool = ThreadPoolExecutor(max_workers=self.spec.concurrency)
        try:
            futures = [pool.submit(guarded, item) for item in items]
            with tqdm(total=len(futures), desc=f"{desc} [{self.name}]", disable=not self.progress,
                      leave=False) as bar:
                for f in futures:
                    f.add_done_callback(lambda _: bar.update())
                done, _ = wait(futures, return_when=FIRST_EXCEPTION)
                failed = [f for f in futures if f.done() and not f.cancelled()
                          and f.exception() is not None and not isinstance(f.exception(), _NotSent)]
                if failed:
                    raise failed[0].exception()
                return [f.result() for f in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _fail(self, reason: str) -> None:
        with self._failures_lock:
            self.failures[reason] += 1

    def _warn(self, new: Counter, total: int, desc: str) -> None:
        """One line for the replies of one call that were no answer (``new``: the failures it added)."""
        if new:
            reasons = ", ".join(f"{n} {reason}" for reason, n in new.most_common())
            log.warning("model %r at %s: %d of %d %s replies were no answer (%s); none of them is cached, "
                        "so a rerun asks again", self.name, self.url, sum(new.values()), total, desc, reasons)

    def _request(self, what: str, create: Callable, read: Callable):
        """``read(create())``, every fault turned into one EndpointError."""
        import openai

        where = f"model {self.name or self.spec.path!r} at {self.url}"
        try:
            response = create()
        except openai.APIStatusError as exc:
            raise EndpointError(f"{where}: {what} failed with HTTP {exc.status_code}: "
                                f"{str(exc)[:300]}; {_advice(exc.status_code)}") from None
        except openai.APIConnectionError as exc:  # includes timeouts, after the client's retries
            raise EndpointError(f"{where}: {what} failed: {type(exc).__name__}: {exc} "
                                f"(after {self.spec.max_retries} retries); {_advice(None)}") from None
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise EndpointError(f"{where}: {what}: the endpoint's body is not the JSON of an "
                                f"OpenAI response ({exc}); is base_url an OpenAI-compatible /v1?") from None
        try:
            return read(response)
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise EndpointError(f"{where}: {what}: the response has not the shape of an OpenAI "
                                f"response ({type(exc).__name__}: {exc}; choices: "
                                f"{getattr(response, 'choices', None)!r:.200}); is base_url an "
                                "OpenAI-compatible /v1?") from None

    def _complete(self, prompt: str, read: Callable, usable: Callable, **kw):
        """``read`` of the endpoint's first choice for ``prompt``, cached; a ``Failed`` reply
        is counted, returned as such, and not cached. A cached value that is not ``usable``
        (a failure cached before failures were told apart) is asked for again."""
        cache_key = ResponseCache.key(self.chat, prompt, kw, read.__name__)
        if (hit := self.cache.get(cache_key)) is not None and usable(hit):
            return hit
        if self.chat:
            create = lambda: self.client.chat.completions.create(  # noqa: E731
                model=self.spec.path, messages=[{"role": "user", "content": prompt}], **kw)
        else:
            kw = {("logprobs" if k == "top_logprobs" else k): v for k, v in kw.items() if k != "logprobs"}
            create = lambda: self.client.completions.create(model=self.spec.path, prompt=prompt, **kw)  # noqa: E731
        value = self._request("chat completion" if self.chat else "completion", create,
                              lambda response: read(response.choices[0]))
        if isinstance(value, Failed):
            self._fail(value.reason)
        else:
            self.cache.put(cache_key, value)
        return value

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        def text(choice) -> str | Failed:
            got = choice.message.content if self.chat else choice.text
            if got is not None and not isinstance(got, str):
                raise TypeError(f"text is {type(got).__name__}, not a string")
            got = (got or "").strip()
            # what a truncated reply holds is kept (as the transformers backend's cut text), not cached
            if early := FINISHED_EARLY.get(getattr(choice, "finish_reason", None)):
                return Failed(got, early)
            return got if got else Failed(got, EMPTY)

        def one(prompt: str) -> str:
            got = self._complete(prompt, text, bool, max_tokens=max_new_tokens, temperature=temperature, seed=seed)
            return got.value if isinstance(got, Failed) else got

        before = Counter(self.failures)
        texts = self._map(one, list(prompts), "generate")
        self._warn(self.failures - before, len(texts), "generate")
        return texts

    def _top_logprobs(self, prompt: str) -> dict[str, float] | Failed:
        def top(choice) -> dict[str, float] | Failed | None:
            if choice.logprobs is None:
                return None
            if self.chat:
                got = {t.token: float(t.logprob) for t in choice.logprobs.content[0].top_logprobs}
            else:
                got = {k: float(v) for k, v in choice.logprobs.top_logprobs[0].items()}
            # one token is asked for, so "length" is how a verdict ends; a filter is no verdict
            if getattr(choice, "finish_reason", None) == "content_filter":
                return Failed(got, FINISHED_EARLY["content_filter"])
            return Failed(got, fault) if (fault := logprob_fault(list(got.values()))) else got

        got = self._complete(prompt, top, lambda hit: logprob_fault(list(hit.values())) is None, max_tokens=1,
                             temperature=0.0, logprobs=True, top_logprobs=self.spec.top_logprobs)
        if got is None:
            raise EndpointError(f"{self.url} gave no log-probs for {self.name!r}: use the generative "
                                "judge mode for it")
        return got

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """As the interface says; NaN for a prompt whose top log-probs give no verdict (the
        reply failed, or holds none of ``candidates``): an unparseable verdict, counted."""
        before = Counter(self.failures)
        tops = self._map(self._top_logprobs, list(prompts), "verdict")
        rows = []
        for top in tops:
            if not isinstance(top, Failed) and (fault := verdict_fault(top, candidates)):
                self._fail(fault)
                top = Failed(top, fault)
            rows.append([math.nan] * len(candidates) if isinstance(top, Failed)
                        else candidate_logprobs(top, candidates))
        self._warn(self.failures - before, len(prompts), "verdict")
        return np.array(rows, dtype=float).reshape(len(prompts), len(candidates))

    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        """As the interface says; a NaN sum where the endpoint's log-probs are NaN or positive
        (an unparseable verdict in the likelihood mode), counted and not cached."""
        if self.chat:
            raise EndpointError(f"{self.name!r}: prompt log-probs need the completions endpoint; give "
                                "the spec a chat_template format string (the likelihood mode needs them)")
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")

        def one(pair: tuple[str, str]) -> tuple[float, int]:
            prompt, completion = pair
            completion = " " + completion if completion and not completion[0].isspace() else completion
            key = ResponseCache.key("echo", prompt, completion)
            if (hit := self.cache.get(key)) is not None and logprob_fault([hit[0]]) is None:
                return tuple(hit)

            def read(response) -> tuple[float, int] | None:
                lp = response.choices[0].logprobs
                if lp is None or lp.text_offset is None:
                    return None
                picked = [float(v) for off, v in zip(lp.text_offset, lp.token_logprobs)
                          if off >= len(prompt) and v is not None]
                if fault := logprob_fault(picked):
                    return Failed((math.nan, len(picked)), fault)
                return float(sum(picked)), len(picked)

            got = self._request("completion (echo)", lambda: self.client.completions.create(
                model=self.spec.path, prompt=prompt + completion, max_tokens=0, echo=True, logprobs=0), read)
            if got is None:
                raise EndpointError(f"{self.url} gave no prompt log-probs (echo) for {self.name!r}")
            if isinstance(got, Failed):
                self._fail(got.reason)
                return got.value
            self.cache.put(key, list(got))
            return got

        before = Counter(self.failures)
        scored = self._map(one, list(zip(prompts, completions)), "score")
        self._warn(self.failures - before, len(scored), "score")
        return np.array(scored, dtype=float).reshape(-1, 2)
