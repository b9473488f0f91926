"""The openai backend's call records against an endpoint on loopback (a real HTTP server)
whose bodies go wrong after it has answered well: a malformed JSON body is retried with
backoff, and one that stays malformed is a failure counted with its reason (never a
traceback, never an abort), recorded as failed and asked again on a rerun. The record file
survives a line cut by a kill, and the older response cache's lines are still answered."""

from __future__ import annotations

import json

import pytest

from judgeaudit.models import ModelSpec, load_model
from judgeaudit.models.call_record import CallJournal, generate_call
from judgeaudit.models.openai_api import journal_path, legacy_key
from tests.fake_endpoint import FakeEndpoint


class Endpoint(FakeEndpoint):
    """/v1/completions answering "ok <prompt>"; a prompt holding "bad" gets a malformed body
    while ``broken``, one holding "flaky" gets one the first time only. Counts requests."""

    def __init__(self) -> None:
        self.requests, self.broken, self.flaky_seen = [], True, False
        super().__init__()

    def reply(self, path: str, body: dict) -> tuple[int, bytes, dict]:
        self.requests.append(body["prompt"])
        return 200, self.answer(body["prompt"]), {}

    def answer(self, prompt: str) -> bytes:
        flaky = "flaky" in prompt and not self.flaky_seen
        self.flaky_seen |= "flaky" in prompt
        if ("bad" in prompt and self.broken) or flaky:
            return b'{"id": "c", "choices": [{"text": "cut off mid'  # a body cut short: not JSON
        choice = {"index": 0, "text": f"ok {prompt}", "finish_reason": "stop", "logprobs": None}
        return json.dumps({"id": "c", "object": "text_completion", "created": 0, "model": "m",
                           "system_fingerprint": "fp_1", "choices": [choice],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()


@pytest.fixture()
def endpoint():
    ep = Endpoint()
    yield ep
    ep.close()


def _judge(url: str, cache, **kw):
    spec = ModelSpec(**{"backend": "openai", "path": "m", "base_url": url, "chat_template": "{prompt}",
                        "max_retries": 2, "timeout_s": 5, "concurrency": 1, "response_cache": str(cache), **kw})
    return load_model(spec, name="my-judge")


def test_a_malformed_body_is_retried_then_counted_never_an_abort(endpoint, tmp_path, caplog):
    judge = _judge(endpoint.url, tmp_path)
    prompts = ["good one", "flaky one", "bad one", "good two"]
    texts = judge.generate(prompts, max_new_tokens=4)  # no exception: the run goes on
    assert texts == ["ok good one", "ok flaky one", "", "ok good two"]
    assert dict(judge.failures) == {"malformed JSON body": 1}
    # the flaky body was asked again once; the bad one on every try (1 + max_retries)
    assert endpoint.requests.count("flaky one") == 2 and endpoint.requests.count("bad one") == 3
    rows = {r["prompt"]: r for r in judge.journal.rows}
    assert rows["bad one"]["status"] == "failed" and rows["bad one"]["reason"] == "malformed JSON body"
    good = rows["good one"]
    assert (good["status"], good["value"], good["model"], good["system_fingerprint"]) == ("ok", "ok good one",
                                                                                          "m", "fp_1")
    assert (good["prompt_tokens"], good["completion_tokens"]) == (3, 2)  # the endpoint's usage
    assert "not the JSON of an OpenAI response" in caplog.text
    endpoint.broken, endpoint.requests = False, []
    again = _judge(endpoint.url, tmp_path)  # a rerun asks only what failed
    assert again.generate(prompts, max_new_tokens=4)[2] == "ok bad one"
    assert endpoint.requests == ["bad one"]


def test_a_line_cut_by_a_kill_is_skipped_and_the_old_cache_still_answers(endpoint, tmp_path):
    judge = _judge(endpoint.url, tmp_path)
    judge.generate(["good one"], max_new_tokens=4)
    path = journal_path(judge.spec)
    kw = {"max_tokens": 4, "temperature": 0.0, "seed": 0}
    with path.open("a") as f:  # a line of the older cache, then a line cut by a kill
        f.write(json.dumps({"k": legacy_key(False, "old prompt", kw, "text"), "v": "old answer"}) + "\n")
        f.write('{"key": "abc", "identity": "openai:')
    endpoint.requests = []
    again = _judge(endpoint.url, tmp_path)
    assert again.generate(["good one", "old prompt"], max_new_tokens=4) == ["ok good one", "old answer"]
    assert endpoint.requests == []
    table = again.journal.table()
    assert list(table["origin"]) == ["endpoint", "cache"] and list(table["status"]) == ["ok", "ok"]
    reread = CallJournal(path, again.journal.identity)  # the migrated answer is now a record
    assert reread.recorded(reread.key(generate_call(False, "old prompt", 4, 0.0, 0)))["value"] == "old answer"
