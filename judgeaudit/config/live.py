"""The ``live_judge`` section: the judge a team uses, audited as a stage (``dvc repro
live_judge``, a Prefect deployment, a scheduled drift check), as ``judgeaudit audit-judge``
audits it from the command line."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from judgeaudit.config.fields import Strict


class LiveData(Strict):
    """One source of real pairs: a reader's name and its folder or file."""

    source: str  # llmbar, pandalm, judgebench, alpacaeval, generic
    path: str


class LiveJudge(Strict):
    """The judge (``openai:MODEL``, ``vllm:PATH``, ``hf:PATH`` or a model of this file), the
    pairs it judges and the battery it goes through."""

    judge: str
    base_url: str | None = None  # openai: the endpoint (default: api.openai.com)
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable, never from params
    prompt_format: str | None = None  # a format string with {prompt}: the completions endpoint
    mode: str = "generative"  # a registered verdict mode
    data: list[LiveData] = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1)  # a seeded sample of this many pairs per source
    biases: list[str] | None = None  # battery items (None: all of them)
    concurrency: int | None = Field(default=None, ge=1)
    n_boot: int = Field(default=1000, ge=100)
    # the pointwise audit, where the judge gives log-probs: score ranges ("1-5", "1-10", "0-100";
    # None: none) and a second, assistant judge for contrastive decoding (a spec as ``judge``)
    ranges: list[str] | None = None
    assistant: str | None = None
    # self-enhancement: a reference judge (a spec as ``judge``; None: not measured). The judge
    # writes its own answer (up to ``answer_tokens``) to each prompt; both judge those pairs
    self_enhancement: str | None = None
    answer_tokens: int = Field(default=256, ge=1)
    # USD per million tokens [prompt, completion] by model name, for the cost --dry-run prints
    # (a YAML list: strict settings take no list for a tuple)
    prices: dict[str, Annotated[list[Annotated[float, Field(ge=0)]], Field(min_length=2, max_length=2)]] = {}
