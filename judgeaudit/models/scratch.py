"""Build the embedded default's own models: a BPE tokenizer trained with
``tokenizers`` and small Llama-style decoder-only transformers from a config."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def train_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: str | Path) -> PreTrainedTokenizerFast:
    """Byte-level BPE over ``texts``, saved as a Hugging Face fast tokenizer."""
    tok = Tokenizer(models.BPE(unk_token=SPECIAL["unk_token"]))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=list(SPECIAL.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL)
    fast.padding_side = "left"  # decoder-only batched generation pads on the left
    fast.save_pretrained(str(out_dir))
    return fast


def build_llama(tokenizer: PreTrainedTokenizerFast, *, layers: int, hidden: int, heads: int,
                intermediate: int, max_positions: int, seed: int) -> LlamaForCausalLM:
    """A randomly initialised Llama-style model sized by the arguments."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=max_positions, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id)
    return LlamaForCausalLM(config)
