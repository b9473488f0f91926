"""Drills for the conversations `judgeaudit serve` takes (a real uvicorn server on loopback
over a real tiny transformer): the whole conversation reaches the model, system message
and earlier turns included, through the tokenizer's chat template when it has one, or
else joined in the plain format ``judgeaudit.models.chat`` documents; what a template
refuses is a 400 naming ``messages``."""

from __future__ import annotations

import shutil

import httpx
import pytest

from judgeaudit.models import ModelSpec, load_model
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server

SYSTEM = "You are a terse judge."
HISTORY = [{"role": "system", "content": SYSTEM},
           {"role": "user", "content": "What is 2 plus 3?"},
           {"role": "assistant", "content": "5"},
           {"role": "user", "content": "What colour is snow?"}]
# a template in the manner of ChatML; it refuses roles it does not know, as real templates do
CHATML = ("{% for m in messages %}{% if m['role'] not in ['system', 'user', 'assistant'] %}"
          "{{ raise_exception('unknown role ' + m['role']) }}{% endif %}"
          "<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
NO_SYSTEM = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
             "{% endif %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant]")


def _chat(port: int, messages: list[dict], model: str = "tiny") -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                      json={"model": model, "messages": messages, "max_tokens": 6}, timeout=60)


def test_history_reaches_a_model_without_a_chat_template_in_the_plain_format(tiny_lm):
    """The tiny judge's template is "Q: {prompt}\\nA:": system messages open the prompt as
    paragraphs, each earlier exchange is the template with its answer after it."""
    want = f"{SYSTEM}\n\nQ: What is 2 plus 3?\nA: 5\nQ: What colour is snow?\nA:"
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits())) as port:
        r = _chat(port, HISTORY)
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"].strip() == \
            tiny_lm.generate([want], max_new_tokens=6)[0]
        assert r.json()["usage"]["prompt_tokens"] == tiny_lm.prompt_tokens(want)
        alone = _chat(port, HISTORY[-1:]).json()  # the last message alone: the bare template, as before
        assert alone["usage"]["prompt_tokens"] == tiny_lm.prompt_tokens(tiny_lm.format_prompt(HISTORY[-1]["content"]))
        assert alone["usage"]["prompt_tokens"] < r.json()["usage"]["prompt_tokens"]
        system_only = _chat(port, [HISTORY[0], HISTORY[-1]]).json()
        assert alone["usage"]["prompt_tokens"] < system_only["usage"]["prompt_tokens"] < \
            r.json()["usage"]["prompt_tokens"]
    assert tiny_lm.format_chat(HISTORY) == want


@pytest.fixture(scope="module")
def templated(tiny_lm, tmp_path_factory):
    """The tiny judge twice over, its tokenizer given a chat template: one that takes a
    system message, one that refuses it."""
    from transformers import AutoTokenizer

    models = {}
    for name, template in (("chatml", CHATML), ("no-system", NO_SYSTEM)):
        path = tmp_path_factory.mktemp(name) / "lm"
        shutil.copytree(tiny_lm.spec.path, path)
        tok = AutoTokenizer.from_pretrained(path)
        tok.chat_template = template
        tok.save_pretrained(path)
        models[name] = load_model(ModelSpec(path=str(path), chat_template="auto", batch_size=4), name=name)
    with live_server(make_app(models, ServeLimits())) as port:
        yield port, models


def test_history_goes_through_the_tokenizers_chat_template(templated):
    port, models = templated
    lm = models["chatml"]
    want = lm.tokenizer.apply_chat_template(HISTORY, tokenize=False, add_generation_prompt=True)
    assert SYSTEM in want and "<|assistant|>5" in want
    r = _chat(port, HISTORY, "chatml")
    assert r.status_code == 200
    assert r.json()["choices"][0]["message"]["content"].strip() == lm.generate([want], max_new_tokens=6)[0]
    assert r.json()["usage"]["prompt_tokens"] == lm.prompt_tokens(want)
    assert lm.format_chat(HISTORY) == want
    developer = [{"role": "developer", "content": SYSTEM}, *HISTORY[1:]]  # OpenAI's newer name for system
    assert _chat(port, developer, "chatml").json()["usage"] == r.json()["usage"]


def test_what_the_template_refuses_is_a_400_naming_messages(templated):
    port, _ = templated
    r = _chat(port, HISTORY, "no-system")
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "messages" and error["message"].startswith("messages:")
    assert "System role not supported" in error["message"]
    assert _chat(port, HISTORY[1:], "no-system").status_code == 200
