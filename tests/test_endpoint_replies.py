"""Drills for the openai backend against an OpenAI-compatible endpoint on loopback (a real
HTTP server) whose replies are well-formed JSON but not answers: an empty reply, a
content-filtered one, verdict log-probs that are NaN, positive, or hold neither "A" nor
"B". Each is a failure counted with its reason (an unparseable verdict in the
log-probability mode, never a tie), none is cached, and a rerun against a healthy
endpoint asks again. A reply cut at the max_tokens asked for is an answer: recorded, with
its note, and never asked again."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from judgeaudit.audits.judge_quality import report_card
from judgeaudit.audits.stats import BootstrapSettings
from judgeaudit.config import Judge
from judgeaudit.judging.benchmark import judge_items
from judgeaudit.models import ModelSpec, load_model
from tests.fake_endpoint import FakeEndpoint

# what the faulty endpoint answers, by a word in the prompt: (text, finish_reason)
FAULTY_TEXT = {"empty": ("", "stop"), "filtered": (None, "content_filter"), "cut": ("Both answers are fin", "length")}
# verdict log-probs by a word in the judging prompt (the answers appear in it)
TOP = {"nan": {" A": math.nan, " B": -1.0}, "positive": {" A": 0.7, " B": -2.0},
       "neither": {" C": -0.2, " D": -2.0, "\n": -3.0}, "good": {" A": -0.1, " B": -2.4}}


class Endpoint(FakeEndpoint):
    """/v1/completions and /v1/chat/completions: while ``healthy`` is False a prompt naming a
    fault in FAULTY_TEXT or TOP gets that reply; otherwise "ok <prompt>" and log-probs for A.
    Counts the requests."""

    def __init__(self) -> None:
        self.healthy, self.requests = False, 0
        super().__init__()

    def reply(self, path: str, body: dict) -> tuple[int, dict, dict]:
        self.requests += 1
        return 200, self.answer(path, body), {}

    def answer(self, path: str, body: dict) -> dict:
        chat = path.endswith("/chat/completions")
        prompt = body["messages"][-1]["content"] if chat else body["prompt"]
        faults = [*FAULTY_TEXT, "nan", "positive", "neither"]
        fault = None if self.healthy else next((w for w in faults if w in prompt), None)
        text, finish = FAULTY_TEXT.get(fault, (f"ok {prompt}", "stop"))
        top = TOP.get(fault, TOP["good"])
        if fault is None and "answer good" in prompt:  # the good answer wins in either position
            top = top if prompt.index("answer good") < prompt.index("plain answer") else {" A": -2.4, " B": -0.1}
        if body.get("logprobs"):  # a verdict: one token
            text, finish = max(top, key=top.get), "length"
        if chat:
            logprobs = {"content": [{"token": text, "logprob": top.get(text, -1.0), "bytes": None,
                                     "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                      for t, v in top.items()]}]} if body.get("logprobs") else None
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                      "logprobs": logprobs}
            return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
        logprobs = {"tokens": [text], "token_logprobs": [top.get(text, -1.0)], "top_logprobs": [top],
                    "text_offset": [len(prompt)]} if body.get("logprobs") else None
        choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": logprobs}
        return {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}


@pytest.fixture()
def endpoint():
    ep = Endpoint()
    yield ep
    ep.close()


def _judge(url: str, chat_template: str, cache) -> object:
    spec = ModelSpec(backend="openai", path="m", base_url=url, chat_template=chat_template, max_retries=0,
                     timeout_s=5, concurrency=2, top_logprobs=5, response_cache=str(cache))
    return load_model(spec, name="my-judge")


@pytest.mark.parametrize("chat_template", ["{prompt}", "auto"])  # completions and chat endpoints
def test_failed_replies_are_counted_not_cached_and_asked_again(endpoint, tmp_path, caplog, chat_template):
    prompts = ["p0 empty", "p1 filtered", "p2 cut", "p3", "p4"]
    judge = _judge(endpoint.url, chat_template, tmp_path)
    with caplog.at_level(logging.WARNING, logger="judgeaudit.models.openai_api"):
        got = judge.generate(prompts, max_new_tokens=8)
    assert got[3:] == ["ok p3", "ok p4"] and got[:3] == ["", "", "Both answers are fin"]
    assert endpoint.requests == 5
    reasons = dict(judge.failures)
    assert sum(reasons.values()) == 2 and len(reasons) == 2
    assert any("empty" in r for r in reasons) and any("content_filter" in r for r in reasons)
    assert dict(judge.notes) == {"cut at max_tokens (finish_reason length)": 1}
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "my-judge" in warned and "2 of 5" in warned and "content_filter" in warned
    assert "1 of 5 replies were cut at max_tokens=8" in warned

    # a rerun against a healthy endpoint sends the two failed requests again, and only them:
    # the cut answer is recorded ok, its note kept
    endpoint.healthy, endpoint.requests = True, 0
    again = _judge(endpoint.url, chat_template, tmp_path)
    assert again.generate(prompts, max_new_tokens=8) == [
        "ok p0 empty", "ok p1 filtered", "Both answers are fin", "ok p3", "ok p4"]
    assert endpoint.requests == 2 and not again.failures
    endpoint.requests = 0
    assert _judge(endpoint.url, chat_template, tmp_path).generate(prompts, max_new_tokens=8)[0] == "ok p0 empty"
    assert endpoint.requests == 0  # now every answer is complete and cached


@pytest.mark.parametrize("chat_template", ["{prompt}", "auto"])
def test_unreadable_verdict_logprobs_are_unparseable_never_ties(endpoint, tmp_path, chat_template):
    """NaN, positive, or neither "A" nor "B" among the top log-probs: an unparseable verdict
    counted with its reason, p_1 missing; the report card counts them unparseable and does
    not read two of them as the orders agreeing."""
    judge = _judge(endpoint.url, chat_template, tmp_path)
    words = ["nan", "positive", "neither", "good"]
    items = pd.DataFrame({"source": "generic", "subset": "s", "item_id": [str(i) for i in range(4)],
                          "prompt": [f"question {i}" for i in range(4)], "response_1": [f"answer {w}" for w in words],
                          "response_2": "plain answer", "model_1": "x", "model_2": "y", "label": "1",
                          "human_labels": None})
    live = judge_items(judge, "my-judge", "prompted", Judge(), items)
    bad = live[live.item_id != "3"]
    assert (bad.verdict == "unparseable").all() and bad.p_1.isna().all()
    good = live[live.item_id == "3"].set_index("order")
    assert (good.verdict == "1").all() and np.allclose(good.p_1, 1 / (1 + math.exp(-2.3)))
    reasons = " ".join(judge.failures)
    assert sum(judge.failures.values()) == 6  # three pairs, two orders each
    assert "NaN" in reasons and "positive" in reasons and "neither" in reasons

    card = report_card(live, BootstrapSettings(50, 0.95, 0))
    card = card[card.judge == "my-judge"].set_index("metric")["estimate"]  # one subset
    assert card["unparseable_rate"] == 0.75
    assert card["positional_agreement"] == 0.25  # only the pair whose two orders decided, and agreed


def test_judge_benchmark_names_the_unparseable_verdicts(endpoint, tmp_path, capsys):
    """`judgeaudit judge-benchmark` with such a judge: a note counts the replies that were no
    answer by reason, and the headline's positional agreement counts only decided pairs."""
    import yaml

    from flows.cli import main
    from tests.conftest import tiny_params

    words = ["nan", "positive", "neither", "good"]
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"item_id": [str(i) for i in range(4)], "judge": "recorded", "verdict": "1", "order": "1",
                  "prompt": [f"question {i}" for i in range(4)], "response_1": [f"answer {w}" for w in words],
                  "response_2": "plain answer", "label": "1"}).to_csv(pairs, index=False)
    params = tiny_params()
    params["models"]["remote"] = {"spec": {"backend": "openai", "path": "m", "base_url": endpoint.url,
                                           "chat_template": "{prompt}", "max_retries": 0, "top_logprobs": 5}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    out = tmp_path / "out"
    assert main(["judge-benchmark", "--judge", "remote", "--mode", "prompted", "--params", str(path), "--root",
                 str(tmp_path / "data"), "--source", "generic", "--path", str(pairs), "--out", str(out),
                 "--no-pu", "--alone", "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    note = next(line for line in printed.splitlines() if line.startswith("note: remote: 6 replies"))
    assert "2 NaN log-probs" in note and "2 positive log-probs" in note and "2 neither 'A' nor 'B'" in note
    [head] = [h for h in json.loads((out / "summary.json").read_text())["headline"] if h["judge"] == "remote"]
    assert head["positional_agreement"] == 0.25 and "unparseable 75%" in head["significant_biases"]
