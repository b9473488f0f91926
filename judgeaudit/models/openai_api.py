"""The ``openai`` backend: any OpenAI-compatible endpoint (``vllm serve``, ``judgeaudit
serve``, hosted APIs). Keys come from the environment only; the openai client retries
with exponential backoff; a thread pool bounds the requests in flight.

With ``chat_template: auto`` prompts go to the chat endpoint as one user message;
with a format string they go, formatted, to the completions endpoint, which is also
the only one that can give prompt log-probs (``echo``), as vLLM's does.

Faults: every endpoint failure becomes one EndpointError naming the model, the URL, the
status and what to do; the openai client retries what retrying can fix (connection
errors, timeouts, 429 and 5xx) with backoff; the first failure that survives its retries
cancels the requests not yet sent. A body that is not the JSON (or the shape) of an OpenAI
response is an EndpointError while the endpoint has given no well-formed reply (it is
likely no OpenAI endpoint at all); afterwards it is retried with backoff and, if it stays
malformed, a failure counted with its reason.

Every call is recorded (``call_record.CallJournal``) in a file under ``response_cache``
when set: a rerun asks nothing recorded ok, ``journal.replay`` asks nothing at all, and
``journal.budget`` caps the tokens a run spends.

A reply that is not an answer (empty, content-filtered, truncated at max_tokens; verdict
log-probs that are NaN or positive, or hold none of the verdict tokens) is a failure:
counted by its reason in ``failures``, logged once per call, recorded as failed (a rerun
asks again), and in the log-probability modes an unparseable verdict (NaN), never a tie.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp
from tqdm.auto import tqdm

from judgeaudit.models.base import LanguageModel
from judgeaudit.models.call_record import (FAILED, MISSING, Call, CallJournal, echo_call, first_words,
                                            generate_call, token_counter, verdict_call)
from judgeaudit.models.judge_spec import judge_identity
from judgeaudit.models.spec import ModelSpec

log = logging.getLogger(__name__)

EMPTY = "empty reply"
FILTERED = "content-filtered (finish_reason content_filter)"
CUT = "cut at max_tokens (finish_reason length)"
# a log-prob is at most 0; a little above it is the rounding of a log-softmax taken in low
# precision, far above it a broken endpoint
_LOGPROB_SLACK = 1e-4


class EndpointError(RuntimeError):
    """The endpoint failed, or cannot give what the judging mode needs; the message names
    the model, the URL and what to do."""


class _NotSent(Exception):
    """A request not sent because an earlier one had failed."""


def _counted(error: EndpointError, sent: int, cause: Exception | None = None) -> EndpointError:
    """``error`` with ``attempts``: the requests sent for its call. ``cause``: the client's
    error where its last request got no answer, which it numbers in the request's
    ``x-stainless-retry-count`` header (0 on the first try)."""
    if cause is not None:
        retried = getattr(getattr(cause, "request", None), "headers", {}).get("x-stainless-retry-count", "0")
        sent += 1 + (int(retried) if str(retried).isdigit() else 0)
    error.attempts = sent
    return error


class Failed(NamedTuple):
    """A reply that is not an answer: what it held, and why it is no answer."""

    value: object
    reason: str


class Kept(NamedTuple):
    """An answer recorded ok with a note: a reply cut at the ``max_tokens`` the caller asked
    for is the answer that request defines (asked again, greedily, it is cut the same way),
    so it is recorded, replayable and never asked twice; the note is counted and warned."""

    value: object
    note: str


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


def legacy_key(*parts) -> str:
    """A call's key in the response cache of earlier versions (still read)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def journal_path(spec: ModelSpec) -> Path | None:
    """The file recording a judge's calls under ``spec.response_cache`` (the file the
    response cache of earlier versions used, so its answers are still found), or None."""
    if not spec.response_cache:
        return None
    url = spec.base_url or "https://api.openai.com/v1"
    return Path(spec.response_cache) / f"{legacy_key(url, spec.path)[:16]}.jsonl"


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
    """A model behind an OpenAI-compatible HTTP endpoint; ``journal``: its recorded calls."""

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
        self.notes: Counter[str] = Counter()  # answers recorded ok with a note (cut at max_tokens)
        self._failures_lock = threading.Lock()
        self._well_formed = False  # whether the endpoint has given one well-formed reply
        self.journal = CallJournal(journal_path(spec), judge_identity(spec))
        self._count = token_counter(None)  # for the budget where a reply reports no usage

    def use_tokenizer(self, count) -> None:
        """Count tokens with ``count`` (text -> tokens) where the endpoint reports no usage."""
        self._count = count

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
            log.warning("model %r at %s: %d of %d %s replies were no answer (%s), recorded as failed, "
                        "so a rerun asks again", self.name, self.url, sum(new.values()), total, desc, reasons)

    def _request(self, what: str, create: Callable, read: Callable) -> tuple[object, object, int]:
        """``(response, read(response), requests sent)``, every fault turned into one
        EndpointError (its ``attempts``: the requests sent), but a malformed body from an
        endpoint that gave a well-formed one before: retried with backoff, then
        ``(None, Failed(None, reason), requests sent)``. ``create`` returns the client's raw
        response, which counts the client's own retries (429, timeouts, 5xx)."""
        import openai

        where = f"model {self.name or self.spec.path!r} at {self.url}"
        sent = 0
        for attempt in range(self.spec.max_retries + 1):
            response = None
            try:
                raw = create()
                sent += 1 + raw.retries_taken
                response = raw.parse()
                value = read(response)
                self._well_formed = True
                return response, value, sent
            except openai.APIStatusError as exc:
                error = EndpointError(f"{where}: {what} failed with HTTP {exc.status_code}: "
                                      f"{str(exc)[:300]}; {_advice(exc.status_code)}")
                raise _counted(error, sent, exc) from None
            except openai.APIConnectionError as exc:  # includes timeouts, after the client's retries
                raise _counted(EndpointError(f"{where}: {what} failed: {type(exc).__name__}: {exc} "
                                             f"(after {self.spec.max_retries} retries); {_advice(None)}"),
                               sent, exc) from None
            except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                reason, detail = "malformed JSON body", (
                    f"{where}: {what}: the endpoint's body is not the JSON of an OpenAI response ({exc}); "
                    "is base_url an OpenAI-compatible /v1?")
            except (AttributeError, IndexError, KeyError, TypeError) as exc:
                reason, detail = "reply not shaped as an OpenAI response", (
                    f"{where}: {what}: the response has not the shape of an OpenAI response ({type(exc).__name__}: "
                    f"{exc}; choices: {getattr(response, 'choices', None)!r:.200}); is base_url an "
                    "OpenAI-compatible /v1?")
            if not self._well_formed:
                raise _counted(EndpointError(detail), sent) from None
            log.warning("%s (try %d of %d)", detail, attempt + 1, self.spec.max_retries + 1)
            if attempt < self.spec.max_retries:
                time.sleep(min(8.0, 0.5 * 2 ** attempt))  # the client's own backoff, for bodies
        return None, Failed(None, reason), sent

    def _call(self, call: Call, what: str, create: Callable, read: Callable, usable: Callable,
              legacy: str, completion_tokens: Callable) -> object:
        """The value ``read`` of the endpoint's reply to ``call``: its recorded value when it
        is recorded ok (or in an older cache: then recorded anew), else asked for and
        recorded, ``ok`` (a ``Kept`` value with its note) or (a ``Failed`` or None value)
        ``failed`` with its reason."""
        journal = self.journal
        key, hit = journal.answer(call, legacy, usable)
        if hit is not MISSING:
            return hit
        if journal.replay:
            raise EndpointError(f"--replay: no recorded call for the prompt {first_words(call.prompt)!r} "
                                f"(key {key}); rerun without --replay to ask the endpoint")
        reserved = journal.budget.reserve(call) if journal.budget else 0
        try:
            response, value, attempts = self._request(what, create, read)
        except EndpointError as exc:
            journal.record(key, call, None, FAILED, str(exc)[:500], attempts=getattr(exc, "attempts", None))
            journal.spend(reserved, None, lambda: (0, 0))
            raise
        stored = value.value if isinstance(value, (Failed, Kept)) else value
        reason = value.reason if isinstance(value, Failed) else "no log-probs" if value is None else None
        status = "ok" if reason is None else FAILED
        journal.record(key, call, stored, status, value.note if isinstance(value, Kept) else reason, response,
                       attempts=attempts)
        journal.spend(reserved, response, lambda: (self._count(call.prompt), completion_tokens(stored)))
        if isinstance(value, Failed):
            self._fail(value.reason)
        if isinstance(value, Kept):
            with self._failures_lock:
                self.notes[value.note] += 1
            return stored
        return value

    def _complete(self, call: Call, read: Callable, usable: Callable, legacy: str, completion_tokens: Callable):
        """``read`` of the endpoint's first choice for ``call`` (``_call``)."""
        kw = dict(call.settings)
        if self.chat:
            create = lambda: self.client.chat.completions.with_raw_response.create(  # noqa: E731
                model=self.spec.path, messages=[{"role": "user", "content": call.prompt}], **kw)
        else:
            kw = {("logprobs" if k == "top_logprobs" else k): v for k, v in kw.items() if k != "logprobs"}
            create = lambda: self.client.completions.with_raw_response.create(  # noqa: E731
                model=self.spec.path, prompt=call.prompt, **kw)
        return self._call(call, "chat completion" if self.chat else "completion", create,
                          lambda response: read(response.choices[0]), usable, legacy, completion_tokens)

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        def text(choice) -> str | Failed:
            got = choice.message.content if self.chat else choice.text
            if got is not None and not isinstance(got, str):
                raise TypeError(f"text is {type(got).__name__}, not a string")
            got = (got or "").strip()
            finish = getattr(choice, "finish_reason", None)
            if finish == "content_filter":
                return Failed(got, FILTERED)
            if not got:
                return Failed(got, EMPTY)
            # cut where the caller capped it, as the transformers backend cuts: an answer
            return Kept(got, CUT) if finish == "length" else got

        def one(prompt: str) -> str:
            kw = {"max_tokens": max_new_tokens, "temperature": temperature, "seed": seed}
            got = self._complete(generate_call(self.chat, prompt, max_new_tokens, temperature, seed), text, bool,
                                 legacy_key(self.chat, prompt, kw, "text"), lambda v: self._count(v or ""))
            return (got.value or "") if isinstance(got, Failed) else got

        before, cut_before = Counter(self.failures), Counter(self.notes)
        texts = self._map(one, list(prompts), "generate")
        self._warn(self.failures - before, len(texts), "generate")
        if cut := sum((self.notes - cut_before).values()):
            log.warning("model %r at %s: %d of %d replies were cut at max_tokens=%d (kept as answers; "
                        "raise the cap for whole ones)", self.name, self.url, cut, len(texts), max_new_tokens)
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
                return Failed(got, FILTERED)
            return Failed(got, fault) if (fault := logprob_fault(list(got.values()))) else got

        k = self.spec.top_logprobs
        kw = {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": k}
        got = self._complete(verdict_call(self.chat, prompt, k), top,
                             lambda hit: logprob_fault(list(hit.values())) is None,
                             legacy_key(self.chat, prompt, kw, "top"), lambda _: 1)
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
        (an unparseable verdict in the likelihood mode), counted and recorded as failed."""
        if self.chat:
            raise EndpointError(f"{self.name!r}: prompt log-probs need the completions endpoint; give "
                                "the spec a chat_template format string (the likelihood mode needs them)")
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")

        def one(pair: tuple[str, str]) -> tuple[float, int]:
            prompt, completion = pair
            completion = " " + completion if completion and not completion[0].isspace() else completion

            def read(response) -> tuple[float, int] | None:
                lp = response.choices[0].logprobs
                if lp is None or lp.text_offset is None:
                    return None
                picked = [float(v) for off, v in zip(lp.text_offset, lp.token_logprobs)
                          if off >= len(prompt) and v is not None]
                if fault := logprob_fault(picked):
                    return Failed((math.nan, len(picked)), fault)
                return [float(sum(picked)), len(picked)]

            call = echo_call(prompt + completion)
            echo = self.client.completions.with_raw_response
            got = self._call(call, "completion (echo)", lambda: echo.create(
                model=self.spec.path, prompt=call.prompt, max_tokens=0, echo=True, logprobs=0), read,
                lambda hit: logprob_fault([hit[0]]) is None, legacy_key("echo", prompt, completion), lambda _: 0)
            if got is None:
                raise EndpointError(f"{self.url} gave no prompt log-probs (echo) for {self.name!r}")
            if isinstance(got, Failed):
                return got.value if got.value is not None else (math.nan, 0)
            return tuple(got)

        before = Counter(self.failures)
        scored = self._map(one, list(zip(prompts, completions)), "score")
        self._warn(self.failures - before, len(scored), "score")
        return np.array(scored, dtype=float).reshape(-1, 2)
