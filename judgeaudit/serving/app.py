"""The HTTP app of ``judgeaudit serve`` (FastAPI). As a serving engine's API server
would, it validates every field (400 naming the field, as OpenAI's API does), caps
``max_tokens``, refuses a prompt longer than the model's context unless told to truncate
(and then says how many tokens it cut), and hands each request to the engine
(``judgeaudit.serving.batching``): a thread of this process, or, as ``judgeaudit serve``
runs it, a process of its own (``judgeaudit.serving.engine_process``)."""

from __future__ import annotations

import asyncio
import time
import uuid

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from judgeaudit.models.hf import TransformersModel
from judgeaudit.serving.batching import Batcher, Job
from judgeaudit.serving.engine_process import EngineProcess
from judgeaudit.serving.schema import ChatRequest, CompletionRequest, ServeLimits


def _field_error(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
    return f"{where}: {first['msg']}" + (f" (got {first.get('input')!r:.80})" if "input" in first else "")


def make_app(models: dict[str, TransformersModel], limits: ServeLimits | None = None,
             engine: str = "thread", engine_threads: int | None = None) -> FastAPI:
    """The ASGI app serving ``models`` by name, its requests batched as they wait.
    ``engine``: "thread" decodes in a thread of this process; "process" in a process of
    its own (``judgeaudit.serving.engine_process``), which loads its own copy of each model
    from its spec and uses ``engine_threads`` torch threads (None: all cores but one, at
    least one; the thread engine shares this process's threads, so it takes none)."""
    limits = limits or ServeLimits()
    if engine not in ("thread", "process"):
        raise ValueError(f"engine: 'thread' or 'process' (got {engine!r})")
    if engine == "thread" and engine_threads is not None:
        raise ValueError("engine_threads applies to the process engine only (the thread engine uses "
                         "this process's torch threads)")
    app = FastAPI(title="judgeaudit serve")
    if engine == "process":
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

    async def run(request: Request, job: Job) -> tuple[str, list[dict]]:
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
                text, steps = await run(request, Job(req.model, prompt, req.max_tokens, req.temperature,
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
        text, steps = await run(request, Job(req.model, prompt, max_tokens, req.temperature, req.seed or 0,
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
