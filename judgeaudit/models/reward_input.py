"""The token ids a sequence-classification reward model reads for a text: one definition
for training (trl's RewardTrainer, given them pre-tokenized) and for scoring, so that the
score head reads at scoring the position it was trained to read."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase


def reward_ids(tokenizer: PreTrainedTokenizerBase, text: str, max_length: int) -> list[int]:
    """``text`` tokenized, cut to its first ``max_length`` tokens, and closed by the
    end-of-text token unless the tokenizer closes it itself (BERT's [SEP]) or names none.

    A decoder's head reads the last token that is not padding: trained on text + EOS (as
    trl appends it) and scored on the bare text, it read a different token at scoring than
    the one its loss shaped. trl drops a pair longer than ``max_length`` from training
    (no error, no count); cutting it keeps the pair, with its start and the closing token."""
    ids = tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
    end = tokenizer.eos_token_id
    if end is None or (ids and ids[-1] in {end, tokenizer.sep_token_id}):
        return ids
    return ids[:max_length - 1] + [end]


def padded(tokenizer: PreTrainedTokenizerBase, rows: Sequence[list[int]]) -> torch.Tensor:
    """Rows of ids padded on the right with the tokenizer's pad id (EOS where it has none)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows])
