"""Model specs as params.yaml names them: backend, path or hub id, dtype, device,
prompt/chat template, and for endpoints their URL, key variable and limits."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judgeaudit.models.registry import check_backend


class ModelSpec(BaseModel):
    """How to load one model, whatever its role (generator, student, judge)."""

    model_config = ConfigDict(extra="forbid")

    backend: str = "transformers"  # a registered backend (models.registry): transformers, vllm, openai
    path: str = Field(description="local checkpoint directory or hub id; for openai: the served model name")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "float32"
    device: str = "cpu"  # "cpu", "cuda", "cuda:1", or "auto"
    # "auto": the tokenizer's chat template when it has one (openai: the chat endpoint);
    # otherwise a format string with one {prompt} field, e.g. "Q: {prompt}\nA:".
    chat_template: str = "auto"
    max_length: int = 256
    batch_size: int = 32
    # openai backend: any OpenAI-compatible endpoint (vllm serve, judgeaudit serve, hosted APIs)
    base_url: str | None = None  # None: api.openai.com
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable, never from params
    concurrency: int = Field(default=8, ge=1)  # requests in flight at once
    max_retries: int = Field(default=4, ge=0)  # with exponential backoff (the openai client's)
    timeout_s: float = Field(default=120.0, gt=0)
    top_logprobs: int = Field(default=20, ge=1)  # how many next-token log-probs the endpoint returns
    # a folder recording every endpoint call (models.call_record), so that a rerun resumes
    # (the pipeline sets it to <data root>/cache/endpoints; None: no cache)
    response_cache: str | None = None
    # vllm backend
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    tensor_parallel_size: int = Field(default=1, ge=1)

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        return check_backend(value)

    @property
    def weight_bytes(self) -> int:
        """Bytes of its local safetensors weights (0: none here, a hub id or an endpoint):
        the relative cost by which the stages start their longest work first."""
        path = Path(self.path)
        return sum(f.stat().st_size for f in path.glob("*.safetensors")) if path.is_dir() else 0


def require_local(path: str, what: str) -> str:
    """``path`` unless it is plainly a local path (absolute, ``./``, ``~``, or deeper than a
    hub id's ``namespace/name``) that does not exist: then a FileNotFoundError that says
    so, instead of the hub's "Repo id must be in the form ..." for a folder never built."""
    local = path.startswith(("/", ".", "~")) or path.count("/") >= 2
    if local and not Path(path).expanduser().exists():
        raise FileNotFoundError(
            f"{path}: {what} does not exist. A model the pipeline builds appears there after "
            "`dvc repro bootstrap` (or `judgeaudit run bootstrap`) with the same --root; "
            "otherwise give a checkpoint folder or a hub id")
    return path
