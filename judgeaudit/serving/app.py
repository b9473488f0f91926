"""The HTTP app of ``judgeaudit serve`` (FastAPI). As a serving engine's API server
would, it checks who asks and how much they send (``judgeaudit.serving.guard``),
validates every field (400 naming the field, in OpenAI's error shape), caps
``max_tokens`` and log-probs, renders a chat's whole conversation with the model's chat
template, refuses a prompt longer than the model's context unless told to truncate (and
then says how many tokens it cut), and hands each request to the engine
(``judgeaudit.serving.batching``): a thread of this process, or, as ``judgeaudit serve``
runs it, a process of its own (``judgeaudit.serving.engine_process``). An echoed prompt's
log-probs are scored in one forward pass with the others waiting beside it
(``judgeaudit.serving.scoring_batch``). Prompts are formatted and tokenised in worker
threads, never on the event loop, so that a long one keeps no other client waiting."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from judgeaudit.models.chat import ChatError
from judgeaudit.models.hf import TransformersModel
from judgeaudit.serving.batching import Batcher, Job
from judgeaudit.serving.engine_process import EngineProcess
from judgeaudit.serving.guard import Guard, openai_error
from judgeaudit.serving.schema import ChatRequest, CompletionRequest, ServeLimits
from judgeaudit.serving.scoring_batch import Echo, ScoreJob, ScoringBatcher


class FieldError(HTTPException):
    """A 400 naming the request's field ``param``."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(400, detail=f"{param}: {message}")
        self.param = param


def _field_error(exc: RequestValidationError) -> tuple[str, str | None]:
    """(the message, the field) of a body that failed validation: its first error."""
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"] if p != "body"]
    if first["type"] == "json_invalid":  # loc holds the character where parsing stopped
        why = first.get("ctx", {}).get("error", "JSON decode error")
        return f"body: not valid JSON ({why} at character {loc[0] if loc else '?'})", None
    if not loc and first["type"] in ("model_attributes_type", "dict_type", "model_type"):
        return f"body: must be a JSON object (got {type(first.get('input')).__name__})", None
    where = ".".join(loc) or "body"
    if first["type"] == "extra_forbidden":
        return f"{where}: not a field judgeaudit serve takes (unknown or not implemented)", where
    msg = first["msg"].removeprefix("Value error, ")
    got = f" (got {first.get('input')!r:.80})" if "input" in first else ""
    return f"{where}: {msg}{got}", where if loc else None


def _body_error(exc: BaseException | None) -> str:
    """Why a body could not be parsed (FastAPI says only that it could not)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"body: not UTF-8 ({exc.reason} at byte {exc.start})"
    if isinstance(exc, RecursionError):
        return "body: JSON nested too deeply"
    return f"body: could not be parsed ({type(exc).__name__}: {exc})" if exc else "body: could not be parsed"


def make_app(models: dict[str, TransformersModel], limits: ServeLimits | None = None,
             engine: str = "thread", engine_threads: int | None = None, *, api_key: str | None = None,
             allowed_hosts: Sequence[str] | None = None, docs: bool = False) -> FastAPI:
    """The ASGI app serving ``models`` by name, its requests batched as they wait.
    ``engine``: "thread" decodes in a thread of this process; "process" in a process of
    its own (``judgeaudit.serving.engine_process``), which loads its own copy of each model
    from its spec and uses ``engine_threads`` torch threads (None: all cores but one, at
    least one; the thread engine shares this process's threads, so it takes none).
    ``api_key``: every request must carry it as a Bearer token; ``allowed_hosts``: the
    names the Host header may give (None: any; ``judgeaudit serve`` gives loopback's when
    bound to loopback); ``docs``: serve /docs, /redoc and /openapi.json."""
    limits = limits or ServeLimits()
    if engine not in ("thread", "process"):
        raise ValueError(f"engine: 'thread' or 'process' (got {engine!r})")
    if engine == "thread" and engine_threads is not None:
        raise ValueError("engine_threads applies to the process engine only (the thread engine uses "
                         "this process's torch threads)")
    app = FastAPI(title="judgeaudit serve", **({} if docs else {"docs_url": None, "redoc_url": None,
                                                                  "openapi_url": None}))
    if engine == "process":
        batcher = EngineProcess(models, limits, threads=engine_threads)
    else:
        batcher = Batcher(models, limits)
    app.state.batcher = batcher
    scorer = app.state.scorer = ScoringBatcher(models, limits, batcher.model_lock)

    @app.exception_handler(StarletteHTTPException)  # Starlette's too: 404, 405, a body it cannot parse
    def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:  # the body OpenAI clients read
        message = str(exc.detail)
        if exc.status_code == 400 and message == "There was an error parsing the body":
            message = _body_error(exc.__cause__)
        return openai_error(exc.status_code, message, getattr(exc, "param", None), headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:  # OpenAI says 400, not 422
        return openai_error(400, *_field_error(exc))

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
                await openai_error(500, f"{type(exc).__name__}: {exc}")(scope, receive, send)

    app.add_middleware(KeepAliveOnFailure)
    app.add_middleware(Guard, api_key=api_key, allowed_hosts=allowed_hosts,
                       max_body_bytes=limits.max_body_bytes)

    def get(name: str) -> TransformersModel:
        if name not in models:
            raise HTTPException(404, detail=f"model {name!r} is not served; served: {sorted(models)}")
        return models[name]

    def check_request(max_tokens: int, n: int, logprobs_field: str, logprobs: int | None) -> None:
        """A 400 naming the field the request asks too much of."""
        if n != 1:
            raise FieldError("n", f"only n=1 is supported (got {n})")
        if max_tokens > limits.max_tokens:
            raise FieldError("max_tokens", f"at most {limits.max_tokens} on this server "
                                           f"(got {max_tokens}; judgeaudit serve --max-tokens)")
        cap = limits.logprobs_cap(logprobs_field)
        if logprobs is not None and logprobs > cap:
            raise FieldError(logprobs_field, f"at most {cap} on this server (got {logprobs}; "
                                             "judgeaudit serve --max-logprobs)")

    async def measure(model: TransformersModel, prompt: str, max_tokens: int) -> tuple[int, int]:
        """(the prompt's tokens the model sees, those it will not: 0, or with --truncate the
        ones cut from the left), or a 400 naming the prompt. Tokenised in a worker thread:
        a long prompt takes seconds, which on the event loop every client would wait."""
        if not prompt.strip():
            raise FieldError("prompt", "empty")
        n_tokens, context = await asyncio.to_thread(model.prompt_tokens, prompt), model.spec.max_length
        if n_tokens + max_tokens <= context:
            return n_tokens, 0
        if not limits.truncate:
            raise FieldError("prompt", f"{n_tokens} tokens, and with max_tokens {max_tokens} "
                                       f"that exceeds the model's context of {context} tokens "
                                       "(judgeaudit serve --truncate cuts long prompts from the left)")
        cut = max(0, n_tokens - context)  # the model keeps the last `context` tokens
        return n_tokens - cut, cut

    async def run(request: Request, job: Job) -> tuple[str, list[dict]]:
        future = asyncio.wrap_future(batcher.submit(job))
        while True:
            done, _ = await asyncio.wait({future}, timeout=0.1)
            if done:
                return future.result()
            if await request.is_disconnected():
                batcher.cancel(job)  # the batch stops generating for it
                raise HTTPException(499, detail="client closed the request")

    async def score(request: Request, jobs: list[ScoreJob]) -> list[Echo]:
        """Each prompt's (tokens, log-probs, offsets), scored in a pass with the prompts of
        whatever other requests wait beside them (a request's list of prompts: a pass's
        worth at a time, so that a long list fits the queue); a client that hangs up leaves
        the queue."""
        echoes, step = [], max(1, min(limits.max_score_batch, limits.max_queue))
        for start in range(0, len(jobs), step):
            chunk = jobs[start:start + step]
            futures = [asyncio.wrap_future(f) for f in scorer.submit(chunk)]  # a 503 where the queue is full
            while True:
                _, pending = await asyncio.wait(futures, timeout=0.1)
                if not pending:
                    break
                if await request.is_disconnected():
                    for job in chunk:
                        scorer.cancel(job)
                    raise HTTPException(499, detail="client closed the request")
            echoes += [f.result() for f in futures]
        return echoes

    @app.get("/v1/models")
    def list_models() -> dict:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "judgeaudit"}
                                           for m in models]}

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest, request: Request) -> dict:
        model = get(req.model)
        check_request(req.max_tokens, req.n, "logprobs", req.logprobs)
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        measured = [await measure(model, prompt, req.max_tokens) for prompt in prompts]
        echoes: list[Echo | None] = [None] * len(prompts)
        if req.echo and req.logprobs is not None:
            echoes = await score(request, [ScoreJob(req.model, p, n) for p, (n, _) in zip(prompts, measured)])
        choices, generated = [], 0
        for k, (prompt, echo) in enumerate(zip(prompts, echoes)):
            text, steps = "", []
            if req.max_tokens > 0:
                text, steps = await run(request, Job(req.model, prompt, req.max_tokens, req.temperature,
                                                      req.seed or 0, req.logprobs or 0))
            generated += len(steps)
            choices.append(_completion_choice(k, prompt, req, text, steps, echo))
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": req.model, "choices": choices,
                "usage": _usage(sum(n for n, _ in measured), generated, sum(cut for _, cut in measured))}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest, request: Request) -> dict:
        model = get(req.model)
        if req.messages[-1].role != "user":
            raise FieldError("messages", "the last message must be the user's")
        max_tokens = req.max_completion_tokens or req.max_tokens or 16
        check_request(max_tokens, req.n, "top_logprobs", req.top_logprobs)
        try:  # the whole conversation, through the model's chat template (a long one: off the loop)
            prompt = await asyncio.to_thread(model.format_chat, [m.model_dump() for m in req.messages])
        except ChatError as exc:
            raise FieldError("messages", str(exc)) from None
        seen, cut = await measure(model, prompt, max_tokens)
        text, steps = await run(request, Job(req.model, prompt, max_tokens, req.temperature, req.seed or 0,
                                              req.top_logprobs or 0))
        logprobs = None
        if req.logprobs:
            logprobs = {"content": [{"token": s["token"], "logprob": s["logprob"], "bytes": None,
                                     "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                      for t, v in s["top"].items()]} for s in steps]}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": req.model, "usage": _usage(seen, len(steps), cut),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": logprobs,
                             "finish_reason": "length" if len(steps) >= max_tokens else "stop"}]}

    return app


def _usage(prompt_tokens: int, completion_tokens: int, truncated: int) -> dict:
    """OpenAI's usage (the prompt's tokens the model saw), and the tokens --truncate cut."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens, "truncated_prompt_tokens": truncated}


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
