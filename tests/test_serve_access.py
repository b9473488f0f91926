"""Drills for who may use `judgeaudit serve` (a real uvicorn server on loopback over a real
tiny transformer): an optional API key checked as a Bearer token (401 in OpenAI's error
shape), the Host header checked (loopback names when bound to loopback: no DNS
rebinding), no API docs unless asked, and a warning when bound beyond loopback without a
key."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from judgeaudit.models import ModelSpec, load_model
from judgeaudit.models.openai_api import EndpointError
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.conftest import free_port
from tests.live_server import live_server, raw_request

KEY = "sk-judgeaudit-test-7f3a"
COMPLETION = {"model": "tiny", "prompt": "Q: What is 2 plus 3?\nA:", "max_tokens": 2}


@pytest.fixture(scope="module")
def keyed(tiny_lm):
    from judgeaudit.serving.guard import LOOPBACK_HOSTS

    app = make_app({"tiny": tiny_lm}, ServeLimits(), api_key=KEY, allowed_hosts=LOOPBACK_HOSTS)
    with live_server(app) as port:
        yield port


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": KEY},
                                     {"Authorization": f"Basic {KEY}"}, {"Authorization": f"Bearer {KEY}x"}])
def test_a_request_without_the_key_is_a_401(keyed, headers):
    for method, path in (("POST", "completions"), ("GET", "models")):
        r = httpx.request(method, f"http://127.0.0.1:{keyed}/v1/{path}", json=COMPLETION if method == "POST" else None,
                          headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        error = r.json()["error"]
        assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"
        assert "JUDGEAUDIT_SERVE_API_KEY" in error["message"] and KEY not in error["message"]


def test_the_key_opens_the_server_to_the_openai_backend(keyed, monkeypatch):
    url = f"http://127.0.0.1:{keyed}/v1"
    r = httpx.post(f"{url}/completions", json=COMPLETION, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200
    monkeypatch.setenv("JUDGE_KEY", KEY)
    spec = dict(backend="openai", path="tiny", base_url=url, chat_template="Q: {prompt}\nA:", max_retries=0)
    assert load_model(ModelSpec(**spec, api_key_env="JUDGE_KEY")).generate(["Hi"], max_new_tokens=2)
    monkeypatch.setenv("JUDGE_KEY", "wrong")
    with pytest.raises(EndpointError, match="HTTP 401"):
        load_model(ModelSpec(**spec, api_key_env="JUDGE_KEY")).generate(["Hi"], max_new_tokens=2)


@pytest.mark.parametrize("host,status", [("127.0.0.1", 200), ("localhost", 200), ("LOCALHOST:8000", 200),
                                         ("[::1]:8000", 200), ("evil.example", 400),
                                         ("evil.example:8000", 400), ("127.0.0.1.evil.example", 400)])
def test_the_host_header_must_name_loopback(keyed, host, status):
    head = (f"GET /v1/models HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {KEY}").encode()
    got, body = raw_request(keyed, head)
    assert got == status, body
    if status == 400:
        assert b'"param":"Host"' in body and b"--allowed-hosts" in body


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"])
def test_no_api_docs_unless_asked(tiny_lm, path):
    with live_server(make_app({"tiny": tiny_lm}, ServeLimits())) as port:
        r = httpx.get(f"http://127.0.0.1:{port}{path}")
        assert r.status_code == 404 and "error" in r.json()
    if path != "/docs/oauth2-redirect":
        with live_server(make_app({"tiny": tiny_lm}, ServeLimits(), docs=True)) as port:
            assert httpx.get(f"http://127.0.0.1:{port}{path}").status_code == 200


def test_binding_beyond_loopback_without_a_key_warns():
    from judgeaudit.serving.guard import LOOPBACK_HOSTS, access_for

    hosts, warning = access_for("0.0.0.0", None, None)
    assert hosts is None and "without an API key" in warning and "JUDGEAUDIT_SERVE_API_KEY" in warning
    hosts, warning = access_for("0.0.0.0", KEY, None)
    assert hosts is None and warning is None
    assert access_for("127.0.0.1", None, None) == (LOOPBACK_HOSTS, None)
    assert access_for("localhost", None, None) == (LOOPBACK_HOSTS, None)
    assert access_for("0.0.0.0", KEY, ["judge.lan"]) == (["judge.lan"], None)
    assert access_for("::1", None, ["*"]) == (None, None)


def test_serve_command_takes_its_key_from_the_environment(tiny_lm, tiny_params_file):
    """`judgeaudit serve` in its own process: the key from $JUDGEAUDIT_SERVE_API_KEY, loopback
    Host names only, no docs."""
    params = yaml.safe_load(tiny_params_file.read_text())
    params["models"]["gen-f"] = {"spec": {"path": tiny_lm.spec.path, "chat_template": "Q: {prompt}\nA:"}}
    tiny_params_file.write_text(yaml.safe_dump(params))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "gen-f", "--params", str(tiny_params_file),
                             "--port", str(port), "--engine", "thread"],
                            env={**os.environ, "JUDGEAUDIT_SERVE_API_KEY": KEY},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                httpx.get(f"{url}/models")
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert httpx.get(f"{url}/models").status_code == 401
        authorised = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(f"{url}/models", headers=authorised).json()["data"][0]["id"] == "gen-f"
        assert httpx.get(f"{url}/models", headers={**authorised, "Host": "rebound.example"}).status_code == 400
        assert httpx.get(f"http://127.0.0.1:{port}/docs", headers=authorised).status_code == 404
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert KEY not in out and "warning" not in out.lower()
