"""``judgeaudit serve``: an OpenAI-compatible HTTP server over any model the project can
load (the embedded judges included): ``/v1/models``, ``/v1/completions`` (with
``logprobs`` and ``echo``) and ``/v1/chat/completions`` (with ``logprobs`` and
``top_logprobs``). It lets the ``openai`` backend be tested against a real server, and
puts one judge behind an endpoint for tools that speak the OpenAI API."""

from __future__ import annotations

import threading
import time
import uuid

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from judgeaudit.models.hf import TransformersModel


class CompletionRequest(BaseModel):
    model: str
    prompt: str | list[str]
    max_tokens: int = 16
    temperature: float = 0.0
    logprobs: int | None = None
    echo: bool = False
    seed: int | None = None
    n: int = 1


class Message(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    model: str
    messages: list[Message]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float = 0.0
    logprobs: bool = False
    top_logprobs: int | None = None
    seed: int | None = None
    n: int = 1


def _completion_choice(model: TransformersModel, index: int, prompt: str, req: CompletionRequest) -> dict:
    text, steps = ("", [])
    if req.max_tokens > 0:
        text, steps = model.generate_with_logprobs(prompt, max_new_tokens=req.max_tokens,
                                                   temperature=req.temperature, seed=req.seed or 0,
                                                   top_k=req.logprobs or 0)
    logprobs = None
    if req.logprobs is not None:
        tokens, token_lp, offsets, tops = [], [], [], []
        if req.echo:
            tokens, token_lp, offsets = model.echo_logprobs(prompt)
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


def make_app(models: dict[str, TransformersModel]) -> FastAPI:
    """The ASGI app serving ``models`` by name (one request at a time per process)."""
    app = FastAPI(title="judgeaudit serve")
    lock = threading.Lock()

    @app.exception_handler(HTTPException)
    def openai_error(_: Request, exc: HTTPException) -> JSONResponse:  # the error body OpenAI clients read
        return JSONResponse(status_code=exc.status_code,
                            content={"error": {"message": exc.detail, "type": "invalid_request_error",
                                               "code": exc.status_code}})

    def get(name: str) -> TransformersModel:
        if name not in models:
            raise HTTPException(404, detail=f"model {name!r} is not served; served: {sorted(models)}")
        return models[name]

    @app.get("/v1/models")
    def list_models() -> dict:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "judgeaudit"}
                                           for m in models]}

    @app.post("/v1/completions")
    def completions(req: CompletionRequest) -> dict:
        model = get(req.model)
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        with lock:
            choices = [_completion_choice(model, k, p, req) for k, p in enumerate(prompts)]
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": req.model, "choices": choices}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest) -> dict:
        model = get(req.model)
        if not req.messages or req.messages[-1].role != "user":
            raise HTTPException(400, detail="the last message must be the user's")
        prompt = model.format_prompt(req.messages[-1].content)
        max_tokens = req.max_completion_tokens or req.max_tokens or 16
        with lock:
            text, steps = model.generate_with_logprobs(prompt, max_new_tokens=max_tokens,
                                                       temperature=req.temperature, seed=req.seed or 0,
                                                       top_k=req.top_logprobs or 0)
        logprobs = None
        if req.logprobs:
            logprobs = {"content": [{"token": s["token"], "logprob": s["logprob"], "bytes": None,
                                     "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                      for t, v in s["top"].items()]} for s in steps]}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": req.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": logprobs,
                             "finish_reason": "length" if len(steps) >= max_tokens else "stop"}]}

    return app
