"""Continuous batching on a real tiny transformer: rows that join a running batch at
different steps, with different lengths, decode exactly as each would alone."""

from __future__ import annotations

from judgeaudit.models.continuous import Row, RunningBatch, supports_continuous


def test_rows_joining_and_leaving_decode_as_alone(tiny_lm):
    assert supports_continuous(tiny_lm)
    prompts = [f"Q: What is {a} plus {b}?\nA:" for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 1), (2, 2)]]
    lengths = [2, 9, 1, 12, 5, 7]
    rows = [Row(k, n, top_k=2) for k, n in enumerate(lengths)]
    batch, done, widths = RunningBatch(tiny_lm), {}, []

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
        text, steps = tiny_lm.generate_with_logprobs(prompt, max_new_tokens=lengths[k], top_k=2)
        assert batch.text(done[k]) == text
        assert [s["token"] for s in done[k].steps] == [s["token"] for s in steps]
        assert all(abs(a["logprob"] - b["logprob"]) < 1e-4 and a["top"].keys() == b["top"].keys()
                   for a, b in zip(done[k].steps, steps))
