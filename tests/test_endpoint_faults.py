"""Drills for the openai backend against a faulty OpenAI-compatible endpoint on loopback
(a real HTTP server, bounded in requests and time): every fault is one EndpointError that
names the model, the URL and what failed; responses already received are kept, so a
rerun resumes instead of starting over."""

from __future__ import annotations

import json
import time

import pytest

from judgeaudit.models import ModelSpec, load_model
from judgeaudit.models.openai_api import EndpointError
from tests.conftest import free_port
from tests.fake_endpoint import FakeEndpoint


class Endpoint(FakeEndpoint):
    """A /v1/completions endpoint whose body is chosen by ``mode``; it counts requests
    and answers "ok <prompt>" until ``fail_after`` requests, then HTTP 500."""

    def __init__(self) -> None:
        self.mode, self.requests, self.fail_after = "ok", 0, None
        super().__init__()

    def reply(self, path: str, body: dict) -> tuple[int, object, dict]:
        self.requests += 1
        return (*self.answer(body), {})

    def answer(self, body: dict) -> tuple[int, object]:
        if self.fail_after is not None and self.requests > self.fail_after:
            return 500, {"error": {"message": "server fell over", "type": "server_error"}}
        choice = {"index": 0, "text": f"ok {body['prompt']}", "finish_reason": "stop", "logprobs": None}
        ok = {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}
        return {"ok": (200, ok), "garbage": (200, b"{not json at all"),
                "wrong_shape": (200, {"choices": "nope"}), "no_choices": (200, {**ok, "choices": []}),
                "error": (503, {"error": {"message": "overloaded"}})}[self.mode]


@pytest.fixture()
def endpoint():
    ep = Endpoint()
    yield ep
    ep.close()


def _judge(url: str, **kw):
    spec = ModelSpec(**{"backend": "openai", "path": "m", "base_url": url, "chat_template": "{prompt}",
                        "max_retries": 0, "timeout_s": 5, "concurrency": 2, **kw})
    return load_model(spec, name="my-judge")


@pytest.mark.parametrize("mode,message", [
    ("garbage", "not the JSON of an OpenAI response"),
    ("wrong_shape", "has not the shape of an OpenAI response"),
    ("no_choices", "has not the shape of an OpenAI response"),
    ("error", "failed with HTTP 503"),
])
def test_each_endpoint_fault_is_one_clear_error(endpoint, mode, message):
    endpoint.mode = mode
    with pytest.raises(EndpointError) as err:
        _judge(endpoint.url).generate(["p1", "p2", "p3", "p4"], max_new_tokens=4)
    text = str(err.value)
    assert "my-judge" in text and endpoint.url in text and message in text
    assert not isinstance(err.value.__cause__, (json.JSONDecodeError, IndexError, TypeError))


def test_a_dead_endpoint_fails_fast_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"  # a port nobody listens on
    start = time.perf_counter()
    with pytest.raises(EndpointError, match=rf"my-judge' at {url}: completion failed: APIConnectionError.*"
                                            "check that the server is running"):
        _judge(url).generate([f"p{i}" for i in range(40)], max_new_tokens=4)
    assert time.perf_counter() - start < 10


def test_a_rerun_after_a_fault_resumes(endpoint, tmp_path):
    """The endpoint dies after 5 requests; the answers received are kept, and the rerun
    sends only the ones that were missing."""
    prompts = [f"p{i}" for i in range(12)]
    endpoint.fail_after = 5
    judge = _judge(endpoint.url, response_cache=str(tmp_path), concurrency=1)
    with pytest.raises(EndpointError, match="HTTP 500"):
        judge.generate(prompts, max_new_tokens=4)
    assert endpoint.requests == 6  # one in flight at a time: the failure stopped every later request
    endpoint.fail_after, endpoint.requests = None, 0
    again = _judge(endpoint.url, response_cache=str(tmp_path), concurrency=1)
    assert again.generate(prompts, max_new_tokens=4) == [f"ok {p}" for p in prompts]
    assert endpoint.requests == len(prompts) - 5
    endpoint.requests = 0
    assert _judge(endpoint.url, response_cache=str(tmp_path)).generate(prompts, max_new_tokens=4)[0] == "ok p0"
    assert endpoint.requests == 0  # everything from the cache


def test_a_call_failing_after_its_retries_records_every_request_it_sent(endpoint, tmp_path):
    """The client's own retries of a 500 are counted in the call's record (``attempts``),
    as the server counted them, and in the journal's counts."""
    endpoint.fail_after = 0
    judge = _judge(endpoint.url, response_cache=str(tmp_path), concurrency=1, max_retries=2)
    with pytest.raises(EndpointError, match="HTTP 500"):
        judge.generate(["p0"], max_new_tokens=4)
    (row,) = judge.journal.rows
    assert row["status"] == "failed" and row["attempts"] == endpoint.requests == 3
    assert judge.journal.counts()["retries"] == 2
