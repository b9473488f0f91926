"""The transformers backend on a real tiny transformer: batched == one-at-a-time,
deterministic verdicts, both judging modes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from judgeaudit.config import load_params
from judgeaudit.judging.pairwise import likelihood_scores, prompted_probabilities

QUESTIONS = ["What is the capital of France?", "What is 3 plus 4?", "What colour is snow?",
             "Which is larger, 120 or 45?", "What sound does a cow make?"]
ANSWERS = ["Certainly. The capital of France is Paris.\n\n**Answer:** Paris", "7.",
           "Sure thing!\n1. Snow is white.\n2. So it's white.", "Answer: 120.", "moo"]


def test_completion_logprobs_batched_equals_single(tiny_lm):
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    tiny_lm._scored.clear()
    batched = tiny_lm.completion_logprobs(prompts, ANSWERS)
    single = []
    for p, a in zip(prompts, ANSWERS):
        tiny_lm._scored.clear()  # computed alone, not read back from the batched call's memo
        single.append(tiny_lm.completion_logprobs([p], [a]))
    np.testing.assert_allclose(batched, np.vstack(single), rtol=1e-4, atol=1e-4)
    assert (batched[:, 0] < 0).all() and (batched[:, 1] >= 1).all()


def test_completion_logprobs_equal_a_full_forward_pass(tiny_lm):
    """Scoring only the completion's positions gives what log-softmax over the whole
    sequence, one sequence at a time with no padding, gives."""
    tiny_lm._scored.clear()
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    got = tiny_lm.completion_logprobs(prompts, ANSWERS)
    tok, eos = tiny_lm.tokenizer, tiny_lm.tokenizer.eos_token_id
    for (total, n), p, a in zip(got, prompts, ANSWERS):
        p_ids = tok(p, add_special_tokens=False)["input_ids"]
        c_ids = tok(" " + a, add_special_tokens=False)["input_ids"] + ([eos] if eos is not None else [])
        ids = torch.tensor([p_ids + c_ids])
        with torch.no_grad():
            logp = torch.log_softmax(tiny_lm.model(input_ids=ids).logits[0, :-1].float(), -1)
        want = logp.gather(-1, ids[0, 1:, None])[-len(c_ids):].sum().item()
        assert n == len(c_ids) and total == pytest.approx(want, abs=1e-4)


def test_a_right_padded_batch_gives_each_sequence_its_unpadded_logits(tiny_lm):
    """Scoring pads on the right and passes no attention mask (causal attention alone): each
    row's last positions get the logits of that sequence run alone, whatever the others'
    lengths, also where a row wants every one of its positions."""
    seqs = tiny_lm._encode([tiny_lm.format_prompt(q) + " " + a for q, a in zip(QUESTIONS, ANSWERS)])
    keep = [1, 4, 2, 6, 3]
    assert len({len(s) for s in seqs}) == len(seqs)
    # the LM head on the positions the batch needs; then on all (one token; three, all wanted)
    for batch, wanted in ((seqs, keep), (seqs + [seqs[1][:1], seqs[0][:3]], keep + [1, 3])):
        for seq, k, logits in zip(batch, wanted, tiny_lm._tail_logits(batch, wanted)):
            with torch.inference_mode():
                alone = tiny_lm.model(input_ids=torch.tensor([seq])).logits[0, -k:].float()
            assert logits.shape == alone.shape
            torch.testing.assert_close(logits, alone, atol=1e-4, rtol=1e-4)


def test_completion_logprobs_score_each_pair_once(tiny_lm, monkeypatch):
    """A second call (another condition of an audit, say) runs the model only on the
    pairs it has not scored yet, and gives the first call's numbers for the others."""
    tiny_lm._scored.clear()
    seen: list[int] = []
    real = tiny_lm._score
    monkeypatch.setattr(tiny_lm, "_score", lambda p, c: seen.append(len(p)) or real(p, c))
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    first = tiny_lm.completion_logprobs(prompts + prompts[:2], ANSWERS + ANSWERS[:2])
    changed = [a + " Indeed." for a in ANSWERS[:2]]
    second = tiny_lm.completion_logprobs(prompts, changed + ANSWERS[2:])
    assert seen == [5, 2]  # duplicates within a call and pairs of the first call: not rescored
    np.testing.assert_array_equal(second[2:], first[2:5])
    assert (second[:2, 1] > first[:2, 1]).all()


def test_next_token_logprobs_batched_equals_single(tiny_lm):
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    batched = tiny_lm.next_token_logprobs(prompts, [" A", " B"])
    single = np.vstack([tiny_lm.next_token_logprobs([p], [" A", " B"]) for p in prompts])
    np.testing.assert_allclose(batched, single, rtol=1e-4, atol=1e-4)
    assert (batched <= 0).all() and np.exp(batched).sum(axis=1).max() <= 1.0 + 1e-6


@pytest.mark.parametrize("tokenizer", ["embedded BPE", "MiniLM WordPiece"])
def test_a_long_prompt_is_encoded_from_its_tail_with_the_same_tokens(tiny_lm, tokenizer, monkeypatch):
    """Prompts cut to their last tokens (5-shot contexts) are encoded from a word start near
    their end: the same tokens as encoding the whole text, at a fraction of the characters."""
    import copy
    import random

    from transformers import AutoTokenizer

    from judgeaudit.models.encoder import DEFAULT_ENCODER, resolve_path

    lm = copy.copy(tiny_lm)
    if tokenizer != "embedded BPE":
        lm.tokenizer = AutoTokenizer.from_pretrained(resolve_path(DEFAULT_ENCODER))
    rng = random.Random(0)
    words = QUESTIONS + ANSWERS + ["\n\n", "  ", "\t", "naïve café", "x" * 30, "**Answer:**", "1,234.5"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(60)]
    texts += ["y" * 5000, "", "Q: short\nA:"]  # no word start to cut at; nothing; short
    encoded: list[int] = []
    real = lm._encode
    monkeypatch.setattr(lm, "_encode", lambda t: encoded.append(sum(map(len, t))) or real(t))
    got = lm._encode_last(texts, 40)
    monkeypatch.undo()
    assert got == [e[-40:] for e in lm._encode(texts)]
    assert sum(encoded) < 0.6 * sum(map(len, texts))  # most of each long text was never encoded


def test_next_token_candidates_must_differ(tiny_lm):
    with pytest.raises(ValueError, match="share a first token"):
        tiny_lm.next_token_logprobs(["Q: x\nA:"], [" A", " A"])


def test_uneven_candidates_scored_as_whole_sequences(tiny_lm):
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS[:3]]
    cands = [" is", " is the"]  # the first's tokens are a prefix of the second's
    a, b = tiny_lm._encode(cands)
    assert b[:len(a)] == a and len(b) > len(a)
    got = tiny_lm.next_token_logprobs(prompts, cands)
    for j, c in enumerate(cands):
        ids = tiny_lm._encode([c])[0]
        for i, p in enumerate(prompts):
            full = tiny_lm._encode([p])[0] + ids
            logp = torch.log_softmax(tiny_lm.model(torch.tensor([full])).logits[0].float(), -1)
            expected = sum(logp[len(full) - len(ids) - 1 + t, tok].item() for t, tok in enumerate(ids))
            assert got[i, j] == pytest.approx(expected, abs=1e-4)


def test_greedy_generation_is_deterministic(tiny_lm):
    prompts = [tiny_lm.format_prompt(q) for q in QUESTIONS]
    first = tiny_lm.generate(prompts, max_new_tokens=10)
    assert first == tiny_lm.generate(prompts, max_new_tokens=10)
    assert first == [tiny_lm.generate([p], max_new_tokens=10)[0] for p in prompts]


def test_likelihood_verdicts_deterministic_and_style_sensitive(tiny_lm):
    # the tiny model was trained on the formal style: it must prefer formal answers
    formal = ["Certainly. The capital of France is Paris.\n\n**Answer:** Paris",
              "Certainly. 3 plus 4 equals 7.\n\n**Answer:** 7"]
    casual = ["Sure thing!\n1. So basically Paris.\n2. That gives us Paris.\nHope that helps!",
              "Sure thing!\n1. So basically 7.\n2. That gives us 7.\nHope that helps!"]
    qs = QUESTIONS[:2]
    s_formal = likelihood_scores(tiny_lm, qs, formal)
    s_casual = likelihood_scores(tiny_lm, qs, casual)
    np.testing.assert_array_equal(s_formal, likelihood_scores(tiny_lm, qs, formal))
    assert (s_formal > s_casual).all()


def test_prompted_verdict_deterministic(tiny_lm):
    template = load_params().judge.prompt_template
    p1 = prompted_probabilities(tiny_lm, template, QUESTIONS, ANSWERS, ANSWERS[::-1])
    p2 = prompted_probabilities(tiny_lm, template, QUESTIONS, ANSWERS, ANSWERS[::-1])
    np.testing.assert_array_equal(p1, p2)
    assert ((p1 > 0) & (p1 < 1)).all()


def test_judge_pairs_both_orders(tiny_lm, tmp_path):
    from judgeaudit import resolve
    from judgeaudit.judging.student_pairs import judge_pairs

    params = load_params()
    pairs = pd.DataFrame(dict(method="sft", student_base="s", prompt_id=[f"e{k}" for k in range(5)],
                              prompt=QUESTIONS, generator_a="ga", generator_b="gb", student_a="sa",
                              student_b="sb", response_a=ANSWERS, response_b=ANSWERS[::-1]))
    judge = resolve.judges(params, tmp_path / "models")[0]
    assert (judge.name, judge.tier, judge.mode) == ("gen-formal", "same", "likelihood")
    out = judge_pairs(judge, pairs, params.judge, params.seed, progress=False, model=tiny_lm)
    assert len(out) == 10 and set(out["order"]) == {"AB", "BA"} and set(out["judge"]) == {"gen-formal"}
    ab, ba = out[out.order == "AB"].reset_index(), out[out.order == "BA"].reset_index()
    swap = {"A": "B", "B": "A", "tie": "tie"}
    assert (ab["verdict"].map(swap) == ba["verdict"]).all()  # likelihood verdicts are order-free
    assert ab.loc[2, "verdict"] == "tie"  # identical responses
    # a per-judge mode in params.yaml reaches the judge through the door's resolution
    prompted = params.model_copy(update={"judge": params.judge.model_copy(update={"modes": {"gen-formal": "prompted"}})})
    judge = resolve.judges(prompted, tmp_path / "models")[0]
    out2 = judge_pairs(judge, pairs, prompted.judge, prompted.seed, progress=False, model=tiny_lm)
    assert set(out2["mode"]) == {"prompted"} and out2["p_a"].between(0, 1).all()


def test_the_door_resolves_each_judge_once_with_its_spec():
    from judgeaudit import resolve

    params, models = load_params(), Path("/nowhere/models")
    roles, judges = resolve.roster(params, models), resolve.judges(params, models)
    assert [j.role for j in roles] == params.judge_roster()
    assert len({j.name for j in judges}) == len(judges) == len({r["judge"] for r in params.judge_roster()})
    assert all(j.spec == params.spec_for(j.name, models) for j in judges)
