"""The judge named on the command line: each accepted form, and a clear error otherwise."""

from __future__ import annotations

import pytest

from judgeaudit.models.judge_spec import JudgeSpecError, judge_identity, parse_judge
from judgeaudit.models.spec import ModelSpec


def test_each_form_names_its_backend():
    api = parse_judge("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY")
    assert (api.backend, api.path, api.base_url, api.api_key_env) == ("openai", "gpt-4o-mini",
                                                                      "http://127.0.0.1:9/v1", "MY_KEY")
    assert parse_judge("vllm:/models/qwen").backend == "vllm"
    assert parse_judge("vllm:/models/qwen").device == "cuda"
    local = parse_judge("hf:/models/judge", device="cpu", batch_size=4)
    assert (local.backend, local.path, local.batch_size) == ("transformers", "/models/judge", 4)


def test_a_params_name_takes_its_spec_and_overrides():
    named = {"judge-x": ModelSpec(path="/m/x")}
    assert parse_judge("judge-x", named=named).path == "/m/x"
    assert parse_judge("judge-x", named=named, concurrency=3).concurrency == 3
    assert named["judge-x"].concurrency == 8  # the params' own spec is left as it was


@pytest.mark.parametrize("text, words", [("openai:", "model name"), ("gpt-4o", "forms"),
                                          ("judge-y", "judge-x")])
def test_bad_forms_say_what_is_accepted(text, words):
    with pytest.raises(JudgeSpecError, match=words):
        parse_judge(text, named={"judge-x": ModelSpec(path="/m/x")})


def test_base_url_only_for_endpoints():
    with pytest.raises(JudgeSpecError, match="--base-url"):
        parse_judge("hf:/m", base_url="http://x")


def test_identity_separates_endpoints_and_models():
    a = judge_identity(parse_judge("openai:m", base_url="http://a/v1"))
    b = judge_identity(parse_judge("openai:m", base_url="http://b/v1"))
    c = judge_identity(parse_judge("openai:n", base_url="http://a/v1"))
    assert len({a, b, c}) == 3
