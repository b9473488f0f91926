"""The openai backend against a real OpenAI-compatible server on loopback
(``judgeaudit serve``'s app over a real tiny transformer): same verdict log-probs,
same greedy text, same completion log-probs as the transformers backend."""

from __future__ import annotations

import time

import numpy as np
import pytest

from judgeaudit.models import ModelSpec, load_model
from judgeaudit.models.openai_api import EndpointError, candidate_logprobs
from judgeaudit.serving.app import make_app
from judgeaudit.serving.schema import ServeLimits
from tests.conftest import free_port
from tests.live_server import live_server

PROMPTS = ["What is 2 plus 3?", "What is the capital of Peru?", "What colour is snow?"]


@pytest.fixture(scope="module")
def server(tiny_lm):
    # --truncate: the local model cuts long prompts from the left, and so must the server to match it;
    # --max-logprobs: the verdict tests read the whole vocabulary's log-probs (OpenAI's cap is 5)
    limits = ServeLimits(truncate=True, max_logprobs=len(tiny_lm.tokenizer))
    with live_server(make_app({"tiny": tiny_lm}, limits)) as port:
        yield f"http://127.0.0.1:{port}/v1"


def _client(url: str, **kw):
    spec = ModelSpec(backend="openai", path="tiny", base_url=url, **kw)
    return load_model(spec, name="tiny-remote")


def _single_token_words(lm, n: int = 3) -> list[str]:
    words = [" Paris", " blue", " the", " is", " answer", " Answer", " white", " Certainly"]
    single = [w for w in words if len(lm.tokenizer(w, add_special_tokens=False)["input_ids"]) == 1]
    assert len(single) >= 2, "the tiny vocabulary should hold some whole words"
    return single[:n]


def test_verdict_logprobs_match_the_local_backend(server, tiny_lm):
    vocab = len(tiny_lm.tokenizer)
    remote = _client(server, chat_template="Q: {prompt}\nA:", top_logprobs=vocab, concurrency=3)
    cands = _single_token_words(tiny_lm)
    prompts = [tiny_lm.format_prompt(p) for p in PROMPTS]
    local = tiny_lm.next_token_logprobs(prompts, cands)
    got = remote.next_token_logprobs([remote.format_prompt(p) for p in PROMPTS], cands)
    np.testing.assert_allclose(got, local, atol=1e-4)


def test_greedy_text_matches_on_both_endpoints(server, tiny_lm):
    completions = _client(server, chat_template="Q: {prompt}\nA:")
    chat = _client(server)  # chat_template auto: the chat endpoint, the server formats
    for p in PROMPTS:
        want = tiny_lm.generate([tiny_lm.format_prompt(p)], max_new_tokens=10)
        assert completions.generate([completions.format_prompt(p)], max_new_tokens=10) == want
        assert chat.generate([chat.format_prompt(p)], max_new_tokens=10) == want


def test_completion_logprobs_by_echo(server, tiny_lm):
    remote = _client(server, chat_template="Q: {prompt}\nA:")
    prompt, answer = tiny_lm.format_prompt(PROMPTS[1]), "The capital of Peru is Lima."
    got = remote.completion_logprobs([prompt], [answer])
    want = tiny_lm._continuation_logprobs([tiny_lm._encode([prompt])[0]], tiny_lm._encode([" " + answer])[0])
    assert got[0, 1] == len(tiny_lm._encode([" " + answer])[0])
    assert got[0, 0] == pytest.approx(want[0], abs=1e-3)
    with pytest.raises(EndpointError, match="completions endpoint"):
        _client(server).completion_logprobs([prompt], [answer])


def test_unknown_model_and_missing_key(server, monkeypatch):
    spec = ModelSpec(backend="openai", path="nope", base_url=server, chat_template="Q: {prompt}\nA:",
                     max_retries=0)
    with pytest.raises(EndpointError, match=r"model 'nope' at http://127.0.0.1:\d+/v1: completion failed "
                                            r"with HTTP 404: .*not served.*check the model name"):
        load_model(spec).generate(["hi"], max_new_tokens=2)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EndpointError, match="OPENAI_API_KEY"):
        load_model(ModelSpec(backend="openai", path="gpt-x"))


def test_candidate_logprobs_whitespace_variants_and_upper_bound():
    top = {"A": np.log(0.5), " B": np.log(0.3)}
    a, b, c = candidate_logprobs(top, [" A", " B", " C"])
    assert a == pytest.approx(np.log(0.5)) and b == pytest.approx(np.log(0.3))
    assert c == pytest.approx(np.log(0.2))  # the mass the list leaves


def test_serve_command_end_to_end(tiny_lm, tiny_params_file, tmp_path):
    """`judgeaudit serve` in its own process: the openai backend gets the same greedy text."""
    import subprocess
    import sys

    import httpx
    import yaml

    params = yaml.safe_load(tiny_params_file.read_text())
    params["models"]["gen-f"] = {"spec": {"path": tiny_lm.spec.path, "chat_template": "Q: {prompt}\nA:"}}
    tiny_params_file.write_text(yaml.safe_dump(params))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "gen-f", "--params", str(tiny_params_file),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/models").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        assert httpx.get(f"{url}/models").json()["data"][0]["id"] == "gen-f"
        remote = load_model(ModelSpec(backend="openai", path="gen-f", base_url=url))
        prompt = "What colour is snow?"
        assert remote.generate([prompt], max_new_tokens=8) == \
            tiny_lm.generate([tiny_lm.format_prompt(prompt)], max_new_tokens=8)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_live_judge_on_benchmark_pairs_through_serve(server, tiny_lm):
    """`judge-benchmark`'s path over the openai backend: a judge behind `judgeaudit serve`
    gives the same verdicts on LLMBar-format pairs, both orders, as the same model loaded
    locally."""
    from judgeaudit.config import Judge
    from judgeaudit.judging.benchmark import benchmark_items, judge_items
    from judgeaudit.sources import read_source
    from tests.conftest import ROOT

    recorded, _ = read_source("llmbar", ROOT / "tests" / "data" / "llmbar")
    items = benchmark_items(recorded)
    remote = _client(server, chat_template="Q: {prompt}\nA:", top_logprobs=len(tiny_lm.tokenizer), concurrency=4)
    # verdict tokens the tiny vocabulary holds whole (the backend merges whitespace variants)
    settings = Judge(verdict_tokens=_single_token_words(tiny_lm, 2))
    local = judge_items(tiny_lm, "tiny", "prompted", settings, items)
    got = judge_items(remote, "tiny", "prompted", settings, items)
    assert len(got) == 2 * len(items) == 14
    np.testing.assert_allclose(got.p_1.to_numpy(), local.p_1.to_numpy(), atol=1e-4)
    assert (got.verdict == local.verdict).all()
