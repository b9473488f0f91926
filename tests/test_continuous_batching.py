"""Continuous batching on a real small transformer: rows that join a running batch at
different steps, with different lengths, or that share a cached prefix, decode exactly as
each would alone."""

from __future__ import annotations

import pytest
import torch

from judgeaudit.models.continuous import Row, RunningBatch, supports_continuous


@pytest.fixture(scope="module")
def sharp_lm(tiny_lm, tmp_path_factory):
    """A random two-layer Llama on tiny_lm's tokenizer with weights scaled up: its outputs
    depend sharply on every position (tiny_lm's barely do), so a cache mistake shows."""
    from judgeaudit.models import ModelSpec, load_model
    from judgeaudit.models.scratch import build_llama

    model = build_llama(tiny_lm.tokenizer, layers=2, hidden=64, heads=4, intermediate=128, max_positions=256, seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(20)
    path = tmp_path_factory.mktemp("sharp_lm")
    model.save_pretrained(path)
    tiny_lm.tokenizer.save_pretrained(path)
    return load_model(ModelSpec(path=str(path), chat_template="Q: {prompt}\nA:"), name="sharp")


def test_rows_joining_and_leaving_decode_as_alone(sharp_lm):
    assert supports_continuous(sharp_lm)
    prompts = [f"Q: What is {a} plus {b}?\nA:" for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 1), (2, 2)]]
    lengths = [2, 9, 1, 12, 5, 7]
    rows = [Row(k, n, top_k=2) for k, n in enumerate(lengths)]
    batch, done, widths = RunningBatch(sharp_lm), {}, []

    def advance(steps: int) -> None:
        for _ in range(steps):
            if len(batch):
                batch.step()
                widths.append(len(batch))
            done.update({r.tag: r for r in batch.retire()})

    batch.admit(prompts[:2], rows[:2])  # two start
    advance(3)
    batch.admit(prompts[2:5], rows[2:5])  # three join mid-way, one of them done at once
    done.update({r.tag: r for r in batch.retire()})
    advance(2)
    batch.admit(prompts[5:], rows[5:])
    advance(20)
    assert len(batch) == 0 and batch.cache is None and sorted(done) == list(range(6))
    assert max(widths) >= 3  # rows really decoded together
    for k, prompt in enumerate(prompts):
        text, steps = sharp_lm.generate_with_logprobs(prompt, max_new_tokens=lengths[k], top_k=2)
        assert batch.text(done[k]) == text
        assert [s["token"] for s in done[k].steps] == [s["token"] for s in steps]
        assert all(abs(a["logprob"] - b["logprob"]) < 1e-4 and a["top"].keys() == b["top"].keys()
                   for a, b in zip(done[k].steps, steps))


def test_a_shared_prefix_is_computed_once_and_rows_decode_as_alone(sharp_lm):
    """Prompts that share a judge template's opening: after the first prefill, the shared
    tokens come from the prefix cache, and every row still decodes as it would alone."""
    head = "Compare two answers to the question and say which is better.\nQuestion: "
    prompts = [f"{head}What is {a} plus {b}?\nA:" for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 1)]]
    other = "Q: Name the capital city of France.\nA:"  # shares nothing: computed whole, cache replaced
    batch, done = RunningBatch(sharp_lm), {}
    batch.admit(prompts[:2], [Row(0, 6, top_k=2), Row(1, 6, top_k=2)])
    assert batch.reused_tokens == 0
    shared = len(sharp_lm._encode([head])[0]) - 1  # at least: the last may merge across the boundary
    batch.step()
    batch.admit(prompts[2:], [Row(k, 6, top_k=2) for k in (2, 3, 4)])
    assert batch.reused_tokens >= 3 * shared > 0
    before = batch.reused_tokens
    batch.admit([other], [Row(5, 6, top_k=2)])
    assert batch.reused_tokens == before
    while len(batch):
        batch.step()
        done.update({r.tag: r for r in batch.retire()})
    for k, prompt in enumerate(prompts + [other]):
        text, steps = sharp_lm.generate_with_logprobs(prompt, max_new_tokens=6, top_k=2)
        assert batch.text(done[k]) == text
        assert all(abs(a["logprob"] - b["logprob"]) < 1e-4 and a["top"].keys() == b["top"].keys()
                   for a, b in zip(done[k].steps, steps))
