"""The bodies of the requests ``judgeaudit serve`` accepts (OpenAI's completions and chat
completions, each field checked: a bad one is a 400 naming it) and the server's limits.

Fields are strict, as OpenAI's API is: ``max_tokens: true`` or ``"3"`` is refused, never
read as 1 or 3. A field the server does not know is refused, not ignored, so that a client
never believes an option it sent (``stop``, ``logit_bias``...) took effect. The few OpenAI
fields it does not implement but can take at no cost are accepted at their neutral value
only: ``stream: false``, ``top_p: 1``, ``frequency_penalty`` and ``presence_penalty`` 0,
``best_of: 1``, and ``user`` (an end-user id, ignored)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SEED_MIN, SEED_MAX = -(2 ** 63), 2 ** 64 - 1  # what torch.manual_seed takes
OPENAI_MAX_LOGPROBS = {"logprobs": 5, "top_logprobs": 20}  # completions, chat completions


def _neutral(name: str, value, neutral) -> None:
    if value != neutral:
        raise ValueError(f"only {neutral!r} is supported (judgeaudit serve does not implement {name})")


class _Request(BaseModel):
    """The fields both endpoints share."""

    model_config = ConfigDict(strict=True, extra="forbid")

    model: str
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = Field(default=None, ge=SEED_MIN, le=SEED_MAX)
    n: int = Field(default=1, ge=1)
    stream: bool = False
    user: str | None = None
    top_p: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    @field_validator("stream")
    @classmethod
    def _no_stream(cls, value: bool) -> bool:
        if value:
            raise ValueError("streaming is not supported; send stream false or leave it out")
        return value

    @field_validator("top_p")
    @classmethod
    def _top_p(cls, value: float) -> float:
        _neutral("nucleus sampling", value, 1.0)
        return value

    @field_validator("frequency_penalty", "presence_penalty")
    @classmethod
    def _penalty(cls, value: float) -> float:
        _neutral("repetition penalties", value, 0.0)
        return value


class CompletionRequest(_Request):
    prompt: str | list[str] = Field(min_length=1)
    max_tokens: int = Field(default=16, ge=0)  # 0: score the prompt only (with echo)
    logprobs: int | None = Field(default=None, ge=0)
    echo: bool = False
    best_of: int = 1

    @field_validator("best_of")
    @classmethod
    def _best_of(cls, value: int) -> int:
        _neutral("best_of", value, 1)
        return value


class Message(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    role: Literal["system", "developer", "user", "assistant"]
    content: str


class ChatRequest(_Request):
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0)


@dataclass
class ServeLimits:
    max_tokens: int = 512  # the most tokens one request may ask for
    max_batch: int = 16  # requests decoding together in the running batch
    max_queue: int = 64  # requests waiting or running; beyond: 503
    truncate: bool = False  # a prompt longer than the context: 400, or cut from the left and reported
    batch_wait_ms: float = 30.0  # how long a request may wait for others to share its prefill or scoring pass
    max_score_batch: int = 16  # echoed prompts scored in one forward pass (1: one at a time)
    score_batch_tokens: int = 4096  # padded tokens (rows x longest) of a scoring pass; a longer prompt: alone
    # the largest request body: ample for a long context's prompt (128k tokens are about
    # 0.5 MB of text) or a list of prompts; beyond it a 413 before the body is read
    max_body_bytes: int = 8 * 2 ** 20
    max_logprobs: int | None = None  # log-probs per token a request may ask for (None: OpenAI's caps)

    def logprobs_cap(self, field: str) -> int:
        """The most log-probs ``field`` ("logprobs" or "top_logprobs") may ask for."""
        return OPENAI_MAX_LOGPROBS[field] if self.max_logprobs is None else self.max_logprobs
