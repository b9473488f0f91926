"""The judge a user names on the command line: ``openai:MODEL``, ``vllm:PATH``, ``hf:PATH``,
or a model name from params.yaml, turned into the ModelSpec its backend loads."""

from __future__ import annotations

from pathlib import Path

from judgeaudit.models.spec import ModelSpec

FORMS = ("openai:MODEL", "vllm:PATH", "hf:PATH", "a model name from params.yaml")
_BACKENDS = {"openai": "openai", "vllm": "vllm", "hf": "transformers"}


class JudgeSpecError(ValueError):
    """A judge named in none of the accepted forms."""


def parse_judge(text: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                named: dict[str, ModelSpec] | None = None, **fields) -> ModelSpec:
    """The spec of the judge ``text`` names. ``base_url`` and ``api_key_env`` apply to
    ``openai:``; ``named``: the params file's models by name (their specs as they load);
    ``fields``: any other ModelSpec field (device, dtype, concurrency, ...), set where given."""
    kind, sep, rest = text.partition(":")
    given = {k: v for k, v in fields.items() if v is not None}
    if sep and kind in _BACKENDS:
        if not rest.strip():
            raise JudgeSpecError(f"--judge {text!r}: {kind}: needs a {'model name' if kind == 'openai' else 'path'} "
                                 f"after the colon (forms: {', '.join(FORMS)})")
        if kind != "openai" and base_url is not None:
            raise JudgeSpecError(f"--base-url applies to openai: judges only (got --judge {text!r})")
        extra = {"base_url": base_url, "api_key_env": api_key_env} if kind == "openai" else {}
        if kind == "vllm":
            given.setdefault("device", "cuda")
        return ModelSpec(backend=_BACKENDS[kind], path=rest, **extra, **given)
    if named is not None and text in named:
        return named[text].model_copy(update=given) if given else named[text]
    known = f"; models in the params file: {', '.join(sorted(named))}" if named else ""
    raise JudgeSpecError(f"--judge {text!r}: not a judge this command knows; forms: {', '.join(FORMS)}{known}")


def judge_identity(spec: ModelSpec) -> str:
    """What identifies the judge in the recorded calls: backend, endpoint and model
    (a local checkpoint by its resolved path)."""
    if spec.backend == "openai":
        return f"openai:{spec.base_url or 'https://api.openai.com/v1'}:{spec.path}"
    path = Path(spec.path).expanduser()
    return f"{spec.backend}:{path.resolve() if path.exists() else spec.path}"
