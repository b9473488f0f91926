"""Prompt scoring batched as requests wait: an echoed completion with ``logprobs`` (each
prompt token's log-prob, as the likelihood judges ask) is a forward pass over its prompt,
and requests for one model that arrive while a pass runs, or within a short window, are
scored together in ONE right-padded pass (``TransformersModel.echo_logprobs_batch``), each
row's log-probs what it gets alone. The queue is bounded (503 when full), and a client that
has gone leaves it at once. It runs in a thread of the HTTP process, on that process's copy
of each model, taking turns with the generation engine through its model lock (a thread
engine decodes on the same copy)."""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from fastapi import HTTPException

from judgeaudit.models.hf import TransformersModel
from judgeaudit.serving.schema import ServeLimits

Echo = tuple[list[str], list[float | None], list[int]]  # (tokens, log-probs, character offsets)


@dataclass(eq=False)  # a request is itself: the queue finds and removes it by identity
class ScoreJob:
    """A prompt to score, its length in tokens (what the model sees: the pass's size
    counts it) and the future its (tokens, log-probs, offsets) land in."""

    model: str
    text: str
    tokens: int
    future: Future = field(default_factory=Future)
    arrived: float = field(default_factory=time.monotonic)


class ScoringBatcher:
    """One worker thread. Each pass takes the oldest waiting request and, in the order they
    came, the others for its model, up to ``max_score_batch`` rows and
    ``score_batch_tokens`` padded tokens (rows x longest: what its logits hold, times the
    vocabulary; a longer prompt runs alone). A pass that fails is rerun row by row, so that
    one bad prompt fails only its own request."""

    def __init__(self, models: dict[str, TransformersModel], limits: ServeLimits, model_lock: threading.Lock
                 ) -> None:
        self.models, self.limits, self.model_lock = models, limits, model_lock
        self.waiting: list[ScoreJob] = []
        self.scoring = 0  # rows of the pass under way
        self.cond = threading.Condition()
        self.passes: list[int] = []  # rows of every pass (for the bench and tests)
        self.abandoned = 0  # requests that left the queue unscored, their clients gone
        self.load: deque[tuple[float, int]] = deque()  # (time, requests waiting or scoring), last second
        self._closed = False
        threading.Thread(target=self._loop, daemon=True, name="judgeaudit-scoring").start()

    def submit(self, jobs: list[ScoreJob]) -> list[Future]:
        """Queue ``jobs`` (one request's prompts) together, so that they share a pass; all
        or none: a 503 where the queue has no room for all of them."""
        with self.cond:
            if len(self.waiting) + self.scoring + len(jobs) > self.limits.max_queue:
                raise HTTPException(503, detail=f"the server is busy: {self.limits.max_queue} prompts queued "
                                                "for scoring (judgeaudit serve --max-queue); retry later")
            for job in jobs:
                self.waiting.append(job)
                self.load.append((job.arrived, len(self.waiting) + self.scoring))
            while self.load[0][0] < time.monotonic() - 1.0:
                self.load.popleft()
            self.cond.notify()
        return [job.future for job in jobs]

    def cancel(self, job: ScoreJob) -> None:
        """The client has gone: a waiting ``job`` leaves the queue now, its future cancelled
        (one in the pass under way is scored, and its answer dropped)."""
        with self.cond:
            if job in self.waiting:
                self.waiting.remove(job)
                self.abandoned += 1
                job.future.cancel()

    def in_flight(self) -> int:
        """Requests waiting or being scored: what ``max_queue`` bounds."""
        with self.cond:
            return len(self.waiting) + self.scoring

    def stats(self) -> dict:
        """Rows of every pass, and the requests abandoned while queued."""
        with self.cond:
            return {"passes": list(self.passes), "abandoned": self.abandoned}

    def close(self) -> None:
        """End the worker thread once its pass is done."""
        with self.cond:
            self._closed = True
            self.cond.notify()

    def _hold_s(self) -> float:
        """Seconds the oldest request may still wait for others to share its pass (0: score
        now). As the generation engine's prefill does: at most ``batch_wait_ms``, and not
        at all once as many wait as the last second's load says will come (so a lone client
        never waits)."""
        oldest = self.waiting[0]
        left = self.limits.batch_wait_ms / 1000 - (time.monotonic() - oldest.arrived)
        if left <= 0:
            return 0.0
        expected = min(self.limits.max_score_batch, max(n for _, n in self.load))
        joining = sum(j.model == oldest.model for j in self.waiting)
        return 0.0 if joining >= expected else left

    def _take(self) -> list[ScoreJob] | None:
        """The next pass's requests, each marked running (a client leaving now no longer
        cancels it); None once closed."""
        with self.cond:
            while True:
                while not self.waiting and not self._closed:
                    self.cond.wait()
                if self._closed:
                    return None
                left = self._hold_s()
                if not left:
                    break
                self.cond.wait(left)
            model = self.waiting[0].model
            taken: list[ScoreJob] = []
            for job in list(self.waiting):
                longest = max([job.tokens, *(j.tokens for j in taken)])
                too_many_tokens = taken and (len(taken) + 1) * longest > self.limits.score_batch_tokens
                if job.model != model or too_many_tokens:
                    continue
                taken.append(job)
                self.waiting.remove(job)
                if len(taken) >= self.limits.max_score_batch:
                    break
            live = [job for job in taken if job.future.set_running_or_notify_cancel()]
            self.scoring = len(live)
            return live

    def _loop(self) -> None:
        while (jobs := self._take()) is not None:
            try:
                if jobs:
                    self._score(jobs)
            finally:
                with self.cond:
                    self.scoring = 0

    def _score(self, jobs: list[ScoreJob]) -> None:
        model = self.models[jobs[0].model]
        self.passes.append(len(jobs))
        if len(jobs) > 1:
            try:
                with self.model_lock:
                    results = model.echo_logprobs_batch([j.text for j in jobs])
            except Exception:  # noqa: BLE001 -- rerun row by row below: only the one at fault fails
                results = None
            if results is not None:
                for job, result in zip(jobs, results):
                    job.future.set_result(result)
                return
        for job in jobs:
            try:
                with self.model_lock:
                    result = model.echo_logprobs_batch([job.text])[0]
                job.future.set_result(result)
            except Exception as exc:  # noqa: BLE001 -- handed to the waiting request
                job.future.set_exception(exc)
