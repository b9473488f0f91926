"""The bodies of the requests ``judgeaudit serve`` accepts (OpenAI's completions and chat
completions, each field checked: a bad one is a 400 naming it) and the server's limits."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field


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
