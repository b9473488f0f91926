"""The serving engine: requests wait in a bounded queue (503 when full) and decode in one
running batch per model that requests join and leave at every step (continuous batching),
greedy and sampled ones together, with the prompts' shared opening computed once
(``judgeaudit.models.continuous``). A client that has gone frees its place in the queue at
once, or its row at the next step. It runs as a thread of the HTTP process, or as the only
thread of an engine process (``judgeaudit.serving.engine_process``)."""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch
from fastapi import HTTPException

from judgeaudit.models.continuous import Row, RunningBatch, supports_continuous
from judgeaudit.models.hf import TransformersModel
from judgeaudit.serving.schema import ServeLimits


GREEDY_BELOW = 1e-5  # as vLLM's _SAMPLING_EPS: logits divided by a smaller temperature overflow (1e-300: inf)


@dataclass(eq=False)  # a request is itself: the queue finds and removes it by identity
class Job:
    """A request in flight: what to generate, the future its result lands in, and
    whether its client has gone. A temperature below ``GREEDY_BELOW`` means greedy."""

    model: str
    prompt: str
    max_tokens: int
    temperature: float
    seed: int
    top_k: int
    future: Future = field(default_factory=Future)
    gone: threading.Event = field(default_factory=threading.Event)
    arrived: float = field(default_factory=time.monotonic)
    id: int = -1  # the engine process's handle for it

    def __post_init__(self) -> None:
        if self.temperature < GREEDY_BELOW:
            self.temperature = 0.0


class Batcher:
    """One worker thread. Requests decode in one running batch per model (continuous
    batching, ``judgeaudit.models.continuous``): at every step the waiting ones join, up
    to ``max_batch`` rows, and finished ones leave. A sampled row draws from a generator of
    its own, seeded with its request's seed, so that a seed gives the same text however
    requests arrive. A request for a model that cannot batch continuously runs alone when
    it is the oldest waiting."""

    def __init__(self, models: dict[str, TransformersModel], limits: ServeLimits, thread: bool = True) -> None:
        self.models, self.limits = models, limits
        self.waiting: list[Job] = []
        self.running_batches = {name: RunningBatch(m) for name, m in models.items() if supports_continuous(m)}
        self.cond = threading.Condition()
        self.model_lock = threading.Lock()  # generation and prompt scoring take turns on the models
        self.batches: list[int] = []  # the rows of every decoding step (for the bench and tests)
        self.prefills: list[int] = []  # the prompts of every prefill
        self.abandoned = 0  # requests not generated, or cut short, because their client had gone
        self.load: deque[tuple[float, int]] = deque()  # (time, requests waiting or running) of the last second
        if thread:  # else the caller runs ``_loop`` (the engine process, in its only thread)
            threading.Thread(target=self._loop, daemon=True, name="judgeaudit-batcher").start()

    @property
    def running(self) -> int:
        return sum(len(b) for b in self.running_batches.values())

    def submit(self, job: Job) -> Future:
        with self.cond:
            if len(self.waiting) + self.running >= self.limits.max_queue:
                raise HTTPException(503, detail=f"the server is busy: {self.limits.max_queue} requests queued "
                                                "(judgeaudit serve --max-queue); retry later")
            self.waiting.append(job)
            self.load.append((job.arrived, len(self.waiting) + self.running))
            while self.load[0][0] < job.arrived - 1.0:
                self.load.popleft()
            self.cond.notify()
        return job.future

    def cancel(self, job: Job) -> None:
        """The client has gone: a waiting ``job`` leaves the queue now (its future
        cancelled), a running one at the next step."""
        job.gone.set()
        with self.cond:
            if job in self.waiting:
                self.waiting.remove(job)
                self._drop(job)

    def in_flight(self) -> int:
        """Requests waiting or running: what ``max_queue`` bounds."""
        with self.cond:
            return len(self.waiting) + self.running

    def stats(self) -> dict:
        """Rows per decoding step, prompts per prefill, requests abandoned, prompt tokens
        served from the prefix cache (for the bench and tests)."""
        return {"batches": list(self.batches), "prefills": list(self.prefills), "abandoned": self.abandoned,
                "reused_tokens": sum(b.reused_tokens for b in self.running_batches.values())}

    def close(self) -> None:
        """Nothing to end: the worker thread is a daemon."""

    def _wait(self, timeout: float | None = None) -> None:
        """Sleep until a request may have come (``submit`` notifies), or ``timeout`` s."""
        self.cond.wait(timeout)

    def _receive(self) -> None:
        """Take in requests that came some other way than ``submit`` (the engine process's pipe)."""

    def _continuous(self, job: Job) -> bool:
        return job.model in self.running_batches

    def _drop(self, job: Job) -> None:
        """Finish ``job`` ungenerated, its client gone: its future is cancelled, so that an
        engine process answers for it and its queue slot is freed."""
        self.abandoned += 1
        job.future.cancel()

    def _row(self, job: Job) -> Row:
        """``job``'s row in the running batch; a sampled one gets a generator seeded with
        its seed (as ``generate`` after ``torch.manual_seed(seed)`` draws alone)."""
        generator = None
        if job.temperature > 0:
            generator = torch.Generator(device=self.models[job.model].device).manual_seed(job.seed)
        return Row(job, job.max_tokens, job.top_k, temperature=job.temperature, generator=generator)

    def _hold_s(self) -> float:
        """Seconds the oldest waiting request may still wait for others to join its prefill
        (0: admit now). One prefill of many prompts costs far less than one per prompt, and
        under load requests arrive a few at a time: as dynamic batchers do, hold them for at
        most ``batch_wait_ms``, and not at all once as many wait as the last second's load
        says will come (so a lone client never waits)."""
        oldest = self.waiting[0]
        left = self.limits.batch_wait_ms / 1000 - (time.monotonic() - oldest.arrived)
        if left <= 0 or not self._continuous(oldest):
            return 0.0
        running = len(self.running_batches[oldest.model])
        expected = min(self.limits.max_batch, max(n for _, n in self.load)) - running
        joining = sum(self._continuous(j) and j.model == oldest.model for j in self.waiting)
        return 0.0 if joining >= expected else left

    def _schedule(self) -> tuple[dict[str, list[Job]], Job | None]:
        """(the greedy jobs joining each model's running batch, a job to run alone)."""
        with self.cond:
            while True:
                self._receive()
                while not self.waiting and not self.running:
                    self._wait()
                    self._receive()
                left = self._hold_s() if self.waiting else 0.0
                if not left:
                    break
                if self.running:
                    return {}, None  # step the running batch meanwhile
                self._wait(left)
            alone = None
            if self.waiting and not self._continuous(self.waiting[0]):
                alone = self.waiting.pop(0)
            joining: dict[str, list[Job]] = {}
            for job in list(self.waiting):
                if self._continuous(job):
                    room = (self.limits.max_batch - len(self.running_batches[job.model])
                            - len(joining.get(job.model, [])))
                    if room > 0:
                        joining.setdefault(job.model, []).append(job)
                        self.waiting.remove(job)
            return joining, alone

    def _loop(self) -> None:
        while True:
            joining, alone = self._schedule()
            if alone is not None:
                self._run_alone(alone)
            for name, jobs in joining.items():
                live, rows = [], []
                for job in jobs:
                    if job.gone.is_set():
                        self._drop(job)
                        continue
                    try:
                        rows.append(self._row(job))
                        live.append(job)
                    except (RuntimeError, ValueError) as exc:  # a seed torch cannot take: this one fails
                        job.future.set_exception(exc)
                if live:
                    batch = self.running_batches[name]
                    self.prefills.append(len(live))
                    self._guarded(name, lambda: batch.admit([j.prompt for j in live], rows), live)
            for name, batch in self.running_batches.items():
                gone = [row for row in batch.rows if row.tag.gone.is_set()]
                self.abandoned += len(gone)  # cut short: their clients have gone
                batch.drop(gone)
                self._finish(batch)
                if len(batch):
                    self.batches.append(len(batch))
                    self._guarded(name, batch.step)
                    self._finish(batch)

    def _guarded(self, name: str, work, joining: list[Job] = ()) -> None:
        """Run ``work`` on the model; a failure fails every request of its batch (and the
        ``joining`` ones), and the model starts a fresh batch."""
        batch = self.running_batches[name]
        try:
            with self.model_lock:
                work()
        except Exception as exc:  # noqa: BLE001 -- handed to each waiting request
            for future in [row.tag.future for row in batch.rows] + [j.future for j in joining]:
                if not future.done():
                    future.set_exception(exc)
            self.running_batches[name] = RunningBatch(self.models[name])

    def _finish(self, batch: RunningBatch) -> None:
        with self.cond:  # the queue bound counts running rows
            done = batch.retire()
        for row in done:
            if not row.tag.future.done():
                row.tag.future.set_result((batch.text(row), row.steps))

    def _run_alone(self, job: Job) -> None:
        if job.gone.is_set():
            self._drop(job)
            return
        try:
            self.batches.append(1)
            with self.model_lock:
                (text, steps), = self.models[job.model].generate_batch_with_logprobs(
                    [job.prompt], [job.max_tokens], temperature=job.temperature, seed=job.seed, top_k=job.top_k,
                    stop=lambda: [job.gone.is_set()])
            self.abandoned += job.gone.is_set() and len(steps) < job.max_tokens
            job.future.set_result((text, steps))
        except Exception as exc:  # noqa: BLE001 -- handed to the waiting request
            job.future.set_exception(exc)
