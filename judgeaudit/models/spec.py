"""Model specs as params.yaml names them: backend, path or hub id, dtype, device,
prompt/chat template."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BACKENDS = ("transformers",)


class ModelSpec(BaseModel):
    """How to load one model, whatever its role (generator, student, judge)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["transformers"] = "transformers"
    path: str = Field(description="local checkpoint directory or hub id")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "float32"
    device: str = "cpu"  # "cpu", "cuda", "cuda:1", or "auto"
    # "auto": the tokenizer's chat template when it has one; otherwise a format string
    # with one {prompt} field, e.g. "Q: {prompt}\nA:".
    chat_template: str = "auto"
    max_length: int = 256
    batch_size: int = 32
