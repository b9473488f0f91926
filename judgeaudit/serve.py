"""``judgeaudit serve``: an OpenAI-compatible HTTP server over any model the project can
load (the embedded judges included): ``/v1/models``, ``/v1/completions`` (with
``logprobs`` and ``echo``) and ``/v1/chat/completions`` (with ``logprobs`` and
``top_logprobs``). It lets the ``openai`` backend be tested against a real server, and
puts one judge behind an endpoint for tools that speak the OpenAI API.

As a serving engine would, it validates every field (400 naming the field, as OpenAI's
API does), caps ``max_tokens``, refuses a prompt longer than the model's context unless
told to truncate (and then says how many tokens it cut), bounds its queue (503 when
full), stops generating for a client that has gone, and decodes greedy requests in one
running batch that requests join and leave at every step (continuous batching), with the
prompts' shared opening computed once (``judgeaudit.models.continuous``). The engine runs
as a thread here or, as ``judgeaudit serve`` runs it, in a process of its own
(``judgeaudit.serve_engine``).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from judgeaudit.models.continuous import Row, RunningBatch, supports_continuous
from judgeaudit.models.hf import TransformersModel


class CompletionRequest(BaseModel):
    model: str
    prompt: str | list[str] = Field(min_length=1)
    max_tokens: int = Field(default=16, ge=0)  # 0: score the prompt only (with echo)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    logprobs: int | None = Field(default=None, ge=0)
    echo: bool = False
    seed: int | None = None
    n: int = Field(default=1, ge=1)


class Message(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    model: str
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0)
    seed: int | None = None
    n: int = Field(default=1, ge=1)


@dataclass
class ServeLimits:
    max_tokens: int = 512  # the most tokens one request may ask for
    max_batch: int = 16  # requests decoding together in the running batch
    max_queue: int = 64  # requests waiting or running; beyond: 503
    truncate: bool = False  # a prompt longer than the context: 400, or cut from the left and reported
    batch_wait_ms: float = 30.0  # how long a request may wait for others to share its prefill


@dataclass
class _Job:
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


class Batcher:
    """One worker thread. Greedy requests decode in one running batch per model
    (continuous batching, ``judgeaudit.models.continuous``): at every step the waiting
    ones join, up to ``max_batch`` rows, and finished ones leave. A sampled request (or a
    model that cannot batch continuously) runs alone when it is the oldest waiting, so that
    a seed gives the same text however requests arrive."""

    def __init__(self, models: dict[str, TransformersModel], limits: ServeLimits, thread: bool = True) -> None:
        self.models, self.limits = models, limits
        self.waiting: list[_Job] = []
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

    def submit(self, job: _Job) -> Future:
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

    def cancel(self, job: _Job) -> None:
        """The client has gone: stop generating for ``job``."""
        job.gone.set()

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

    def _continuous(self, job: _Job) -> bool:
        return job.temperature == 0 and job.model in self.running_batches

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

    def _schedule(self) -> tuple[dict[str, list[_Job]], _Job | None]:
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
            joining: dict[str, list[_Job]] = {}
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
                live = [j for j in jobs if not j.gone.is_set()]
                self.abandoned += len(jobs) - len(live)
                if live:
                    batch = self.running_batches[name]
                    self.prefills.append(len(live))
                    self._guarded(name, lambda: batch.admit([j.prompt for j in live],
                                                            [Row(j, j.max_tokens, j.top_k) for j in live]), live)
            for name, batch in self.running_batches.items():
                gone = [row for row in batch.rows if row.tag.gone.is_set()]
                self.abandoned += len(gone)  # cut short: their clients have gone
                batch.drop(gone)
                self._finish(batch)
                if len(batch):
                    self.batches.append(len(batch))
                    self._guarded(name, batch.step)
                    self._finish(batch)

    def _guarded(self, name: str, work, joining: list[_Job] = ()) -> None:
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

    def _run_alone(self, job: _Job) -> None:
        if job.gone.is_set():
            self.abandoned += 1
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


def _field_error(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
    return f"{where}: {first['msg']}" + (f" (got {first.get('input')!r:.80})" if "input" in first else "")


def make_app(models: dict[str, TransformersModel], limits: ServeLimits | None = None,
             engine: str = "thread", engine_threads: int | None = None) -> FastAPI:
    """The ASGI app serving ``models`` by name, its requests batched as they wait.
    ``engine``: "thread" decodes in a thread of this process; "process" in a process of
    its own (``judgeaudit.serve_engine``), which loads its own copy of each model from its
    spec and uses ``engine_threads`` torch threads (None: all cores but one, at least one;
    the thread engine shares this process's threads, so it takes none)."""
    limits = limits or ServeLimits()
    if engine not in ("thread", "process"):
        raise ValueError(f"engine: 'thread' or 'process' (got {engine!r})")
    if engine == "thread" and engine_threads is not None:
        raise ValueError("engine_threads applies to the process engine only (the thread engine uses "
                         "this process's torch threads)")
    app = FastAPI(title="judgeaudit serve")
    if engine == "process":
        from judgeaudit.serve_engine import EngineProcess

        batcher = EngineProcess(models, limits, threads=engine_threads)
    else:
        batcher = Batcher(models, limits)
    app.state.batcher = batcher

    def error(status: int, message: str, param: str | None = None) -> JSONResponse:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind,
                                                                   "param": param, "code": status}})

    @app.exception_handler(HTTPException)
    def http_error(_: Request, exc: HTTPException) -> JSONResponse:  # the error body OpenAI clients read
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:  # OpenAI says 400, not 422
        loc = [str(p) for p in exc.errors()[0]["loc"] if p != "body"]
        return error(400, _field_error(exc), ".".join(loc) or None)

    class KeepAliveOnFailure:
        """An unexpected failure becomes a JSON 500 and the connection stays usable (a
        plain ASGI middleware: Starlette's BaseHTTPMiddleware would hide disconnects)."""

        def __init__(self, inner) -> None:
            self.inner = inner

        async def __call__(self, scope, receive, send) -> None:
            started = False

            async def tracked(message: dict) -> None:
                nonlocal started
                started |= message["type"] == "http.response.start"
                await send(message)
            try:
                await self.inner(scope, receive, tracked)
            except Exception as exc:  # noqa: BLE001
                if started or scope["type"] != "http":
                    raise
                await error(500, f"{type(exc).__name__}: {exc}")(scope, receive, send)

    app.add_middleware(KeepAliveOnFailure)

    def get(name: str) -> TransformersModel:
        if name not in models:
            raise HTTPException(404, detail=f"model {name!r} is not served; served: {sorted(models)}")
        return models[name]

    def check(model: TransformersModel, prompt: str, max_tokens: int, n: int) -> int:
        """The prompt tokens the model will not see (0, or with --truncate the ones cut
        from the left), or a 400 naming the field."""
        if n != 1:
            raise HTTPException(400, detail=f"n: only n=1 is supported (got {n})")
        if max_tokens > limits.max_tokens:
            raise HTTPException(400, detail=f"max_tokens: at most {limits.max_tokens} on this server "
                                            f"(got {max_tokens}; judgeaudit serve --max-tokens)")
        if not prompt.strip():
            raise HTTPException(400, detail="prompt: empty")
        n_tokens, context = model.prompt_tokens(prompt), model.spec.max_length
        if n_tokens + max_tokens <= context:
            return 0
        if not limits.truncate:
            raise HTTPException(400, detail=f"prompt: {n_tokens} tokens, and with max_tokens {max_tokens} "
                                            f"that exceeds the model's context of {context} tokens "
                                            "(judgeaudit serve --truncate cuts long prompts from the left)")
        return max(0, n_tokens - context)  # the model keeps the last `context` tokens

    async def run(request: Request, job: _Job) -> tuple[str, list[dict]]:
        future = asyncio.wrap_future(batcher.submit(job))
        while True:
            done, _ = await asyncio.wait({future}, timeout=0.1)
            if done:
                return future.result()
            if await request.is_disconnected():
                batcher.cancel(job)  # the batch stops generating for it
                raise HTTPException(499, detail="client closed the request")

    @app.get("/v1/models")
    def list_models() -> dict:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "judgeaudit"}
                                           for m in models]}

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest, request: Request) -> dict:
        model = get(req.model)
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        choices, truncated = [], 0
        for k, prompt in enumerate(prompts):
            truncated += check(model, prompt, req.max_tokens, req.n)
            text, steps = "", []
            if req.max_tokens > 0:
                text, steps = await run(request, _Job(req.model, prompt, req.max_tokens, req.temperature,
                                                      req.seed or 0, req.logprobs or 0))
            echo = None
            if req.echo and req.logprobs is not None:
                def score(prompt: str = prompt) -> tuple:
                    with batcher.model_lock:
                        return model.echo_logprobs(prompt)
                echo = await asyncio.to_thread(score)
            choices.append(_completion_choice(k, prompt, req, text, steps, echo))
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": req.model, "choices": choices, "usage": {"truncated_prompt_tokens": truncated}}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest, request: Request) -> dict:
        model = get(req.model)
        if req.messages[-1].role != "user":
            raise HTTPException(400, detail="messages: the last message must be the user's")
        max_tokens = req.max_completion_tokens or req.max_tokens or 16
        prompt = model.format_prompt(req.messages[-1].content)
        cut = check(model, prompt, max_tokens, req.n)
        text, steps = await run(request, _Job(req.model, prompt, max_tokens, req.temperature, req.seed or 0,
                                              req.top_logprobs or 0))
        logprobs = None
        if req.logprobs:
            logprobs = {"content": [{"token": s["token"], "logprob": s["logprob"], "bytes": None,
                                     "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                      for t, v in s["top"].items()]} for s in steps]}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": req.model, "usage": {"truncated_prompt_tokens": cut},
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": logprobs,
                             "finish_reason": "length" if len(steps) >= max_tokens else "stop"}]}

    return app


def _completion_choice(index: int, prompt: str, req: CompletionRequest, text: str, steps: list[dict],
                       echo: tuple | None) -> dict:
    """One choice; ``echo``: the prompt's (tokens, log-probs, offsets) when echoed."""
    logprobs = None
    if req.logprobs is not None:
        tokens, token_lp, offsets, tops = [], [], [], []
        if echo is not None:
            tokens, token_lp, offsets = (list(x) for x in echo)
            tops = [None] * len(tokens)
        start = len(prompt) if req.echo else 0
        for s in steps:
            tokens.append(s["token"])
            token_lp.append(s["logprob"])
            offsets.append(start)
            tops.append(s["top"])
            start += len(s["token"])
        logprobs = {"tokens": tokens, "token_logprobs": token_lp, "top_logprobs": tops, "text_offset": offsets}
    return {"index": index, "text": (prompt if req.echo else "") + text, "logprobs": logprobs,
            "finish_reason": "length" if len(steps) >= req.max_tokens else "stop"}
