"""A GPT-2-style decoder built from scratch (``transformers``' GPT2 config), the embedded
default's second architecture beside ``scratch.py``'s Llama: learned absolute positions,
LayerNorm and a GELU MLP where Llama has rotary positions, RMSNorm and SwiGLU."""

from __future__ import annotations

import torch
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast


def build_gpt2(tokenizer: PreTrainedTokenizerFast, *, layers: int, hidden: int, heads: int,
               intermediate: int, max_positions: int, seed: int) -> GPT2LMHeadModel:
    """A randomly initialised GPT-2-style model sized as ``build_llama``'s arguments size a Llama."""
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_embd=hidden, n_inner=intermediate, n_layer=layers, n_head=heads,
        n_positions=max_positions, tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return GPT2LMHeadModel(config)
