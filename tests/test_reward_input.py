"""A reward model reads the same ids in training and in scoring (judgeaudit.models.reward_input)."""

from __future__ import annotations

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from judgeaudit.config import TrainArgs
from judgeaudit.judging.reward import RewardScorer, comparison_pair
from judgeaudit.models.encoder import DEFAULT_ENCODER, resolve_path
from judgeaudit.models.reward_input import padded, reward_ids
from judgeaudit.training.trainers import reward_model


def test_a_text_is_closed_once_and_cut_to_fit(tiny_lm):
    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    short = reward_ids(tok, "Q: what is 2 plus 2? A: It is 4.", 64)
    assert short[-1] == tok.eos_token_id and short.count(tok.eos_token_id) == 1
    assert reward_ids(tok, "It is 4." + tok.eos_token, 64).count(tok.eos_token_id) == 1  # closed already
    long = reward_ids(tok, "It is four, surely. " * 40, 24)
    assert len(long) == 24 and long[-1] == tok.eos_token_id
    assert long[:-1] == tok("It is four, surely. " * 40)["input_ids"][:23]  # the start kept


def test_a_bert_tokenizer_keeps_its_own_closing_token():
    tok = AutoTokenizer.from_pretrained(resolve_path(DEFAULT_ENCODER))
    ids = reward_ids(tok, "It is four. " * 100, 32)
    assert tok.eos_token_id is None and len(ids) == 32
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id and ids.count(tok.sep_token_id) == 1


def test_pairs_longer_than_max_length_are_trained_on_and_scored_where_the_head_was_trained(tiny_lm, tmp_path):
    """trl's RewardTrainer dropped every pair longer than ``max_length`` (here all of them:
    no training at all); cut to fit they train. The scorer then reads each text's closing
    token, as training did: its score is the head's on the ids training saw."""
    long = " Here is the reasoning, step by step, with every detail." * 4
    rows = [comparison_pair(f"what is {i} plus 1?", f"It is {i + 1}.{long}", f"It is {i + 7}.{long}")
            for i in range(16)]
    tok = AutoTokenizer.from_pretrained(tiny_lm.spec.path)
    assert min(len(tok(r["chosen"])["input_ids"]) for r in rows) > 48
    fit = reward_model(tiny_lm.spec.path, rows, tmp_path / "rm", TrainArgs(epochs=1, lr=1e-3, batch_size=8),
                       seed=0, max_length=48)
    assert fit["steps"] == 2  # 16 pairs in batches of 8
    scorer = RewardScorer(str(tmp_path / "rm"), max_length=48)
    texts = [r["chosen"] for r in rows[:4]] + ["It is 5."]
    model = AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "rm")).train(False)
    with torch.inference_mode():
        alone = [float(model(input_ids=padded(tok, [reward_ids(tok, t, 48)])).logits[0, 0]) for t in texts]
        bare = float(model(input_ids=torch.tensor([tok("It is 5.")["input_ids"]])).logits[0, 0])
    np.testing.assert_allclose(scorer.rewards(texts), alone, atol=1e-5)
    assert abs(bare - alone[-1]) > 1e-4  # the bare text is read at another token
