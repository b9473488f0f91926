"""Drills for the fields `judgeaudit serve` takes (a real uvicorn server on loopback over a
real tiny transformer): what OpenAI's API refuses is a 400 in its error shape naming the
field (bounded seeds and log-probs, strict types, no unknown fields, no streaming), a body
that is not JSON is a 400 in the same shape, and what OpenAI clients send still works."""

from __future__ import annotations

import json

import httpx
import pytest

from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.live_server import live_server, raw_request

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "What is 2 plus 3?"}], "max_tokens": 2}
COMPLETION = {"model": "tiny", "prompt": "Q: What is 2 plus 3?\nA:", "max_tokens": 2}


@pytest.fixture(scope="module")
def url(tiny_lm):
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits())) as port:
        yield f"http://127.0.0.1:{port}/v1"


def _openai_error(r: httpx.Response) -> dict:
    """The error of an answer in OpenAI's shape (and nothing else)."""
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] == r.status_code
    return body["error"]


@pytest.mark.parametrize("path,change,field", [
    ("completions", {"seed": 2 ** 64}, "seed"),
    ("chat/completions", {"seed": -(2 ** 63) - 1}, "seed"),
    ("completions", {"logprobs": 6}, "logprobs"),
    ("completions", {"logprobs": 10 ** 9}, "logprobs"),
    ("chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ("chat/completions", {"logprobs": True, "top_logprobs": 10 ** 9}, "top_logprobs"),
    ("completions", {"stream": True}, "stream"),
    ("chat/completions", {"stream": True}, "stream"),
    ("completions", {"frobnicate": 1}, "frobnicate"),
    ("chat/completions", {"stop": ["\n"]}, "stop"),
    ("chat/completions", {"messages": [{"role": "user", "content": "Hi", "colour": "red"}]}, "messages.0.colour"),
    ("chat/completions", {"messages": [{"role": "tool", "content": "Hi"}]}, "messages.0.role"),
    ("completions", {"top_p": 0.5}, "top_p"),
    ("completions", {"max_tokens": True}, "max_tokens"),
    ("chat/completions", {"max_tokens": True}, "max_tokens"),
    ("chat/completions", {"max_tokens": "3"}, "max_tokens"),
    ("completions", {"temperature": True}, "temperature"),
    ("completions", {"echo": 1}, "echo"),
    ("completions", {"n": 1.0}, "n"),
])
def test_what_openai_refuses_is_a_400_naming_the_field(url, path, change, field):
    r = httpx.post(f"{url}/{path}", json={**(CHAT if path.startswith("chat") else COMPLETION), **change})
    assert r.status_code == 400, r.text
    error = _openai_error(r)
    assert error["param"] == field and error["message"].startswith(f"{field}:"), error


@pytest.mark.parametrize("body,says", [
    (b'{"model": "tiny", "prompt": ', "not valid JSON"),
    (b'{"model": "tiny", "prompt": "\xff\xfe caf\xe9"}', "UTF-8"),
    (b'{"model": "tiny", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested"),
    (b"[1, 2, 3]", "JSON object"),
])
def test_a_body_that_is_not_a_json_object_is_an_openai_400(url, body, says):
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
    status, answer = raw_request(port, head, body)
    assert status == 400, answer
    error = json.loads(answer)["error"]
    assert error["param"] is None and error["message"].startswith("body:") and says in error["message"], error
    assert error["type"] == "invalid_request_error"


def test_the_caps_themselves_and_harmless_openai_fields_are_taken(url, tiny_lm):
    r = httpx.post(f"{url}/completions", json={**COMPLETION, "logprobs": 5, "seed": 2 ** 64 - 1, "stream": False,
                                               "user": "judge-7", "top_p": 1, "frequency_penalty": 0,
                                               "presence_penalty": 0, "best_of": 1})
    assert r.status_code == 200, r.text
    # tokens whose text is the same (byte pieces) share one entry: at most the number asked for
    assert all(0 < len(top) <= 5 for top in r.json()["choices"][0]["logprobs"]["top_logprobs"])
    r = httpx.post(f"{url}/chat/completions", json={**CHAT, "logprobs": True, "top_logprobs": 20, "stream": False,
                                                    "user": "judge-7", "seed": -(2 ** 63)})
    assert r.status_code == 200, r.text
    assert all(5 < len(t["top_logprobs"]) <= 20 for t in r.json()["choices"][0]["logprobs"]["content"])


def test_the_openai_client_gets_answers(url):
    """What the `openai` package sends (the backend's calls and a few more of its arguments)."""
    from openai import OpenAI

    client = OpenAI(api_key="EMPTY", base_url=url, max_retries=0)
    done = client.completions.create(model="tiny", prompt=COMPLETION["prompt"], max_tokens=2, temperature=0,
                                     seed=3, logprobs=2, echo=True, user="u", stream=False)
    assert done.choices[0].logprobs.top_logprobs[-1] and done.choices[0].text.startswith(COMPLETION["prompt"])
    chat = client.chat.completions.create(model="tiny", messages=CHAT["messages"], max_tokens=2, temperature=0.0,
                                          seed=0, logprobs=True, top_logprobs=3, user="u")
    assert chat.choices[0].message.content is not None


def test_a_server_may_allow_more_log_probs(tiny_lm):
    """`judgeaudit serve --max-logprobs N`: a judge reading the whole vocabulary's log-probs."""
    vocab = len(tiny_lm.tokenizer)
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits(max_logprobs=vocab))) as port:
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={**COMPLETION, "logprobs": vocab})
        assert r.status_code == 200 and len(r.json()["choices"][0]["logprobs"]["top_logprobs"][0]) > 20
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={**COMPLETION, "logprobs": vocab + 1})
        assert r.status_code == 400 and r.json()["error"]["param"] == "logprobs"


@pytest.mark.parametrize("method,path,status", [("GET", "completions", 405), ("POST", "embeddings", 404),
                                                ("POST", "models", 405)])
def test_a_wrong_path_or_method_is_answered_in_openais_shape(url, method, path, status):
    r = httpx.request(method, f"{url}/{path}", json=COMPLETION)
    assert r.status_code == status and _openai_error(r)["param"] is None
