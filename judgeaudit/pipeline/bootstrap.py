"""Stage ``bootstrap``: the prompt table, the tokenizer and the embedded base models."""

from __future__ import annotations

import random
from pathlib import Path

from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.layout import Layout

def corpus_rows(params: Params, style: str, seed: int, n: int | None = None) -> list[dict]:
    """Pre-training rows in one house style ("mixed": a random style per item)."""
    rng = random.Random(seed)
    items = make_items(n or params.corpus.n_pretrain, seed, "c", tuple(params.corpus.categories))
    template = params.embedded.template
    return [{"prompt": template.format(prompt=it.prompt),
             "completion": " " + render(it, rng.choice(STYLES) if style == "mixed" else style, rng)}
            for it in items]


def build_tokenizer(params: Params, layout: Layout) -> Path:
    """One BPE tokenizer over every style, shared by the embedded models."""
    from judgeaudit.models.scratch import train_tokenizer

    rows = [r for s in STYLES for r in corpus_rows(params, s, params.seed + 7, 400)]
    train_tokenizer((r["prompt"] + r["completion"] for r in rows), params.embedded.vocab_size,
                    layout.tokenizer)
    return layout.tokenizer


def build_cost(params: Params, name: str) -> float:
    """Model ``name``'s relative training cost (epochs x the weights a step updates), to
    start the longest builds first."""
    build = params.models[name].build
    root = name
    while params.models[root].build.init_from:  # an inherited model has its parent's size
        root = params.models[root].build.init_from
    size = params.embedded.sizes[params.models[root].build.size]
    epochs = params.embedded.pretrain.epochs if build.epochs is None else build.epochs
    per_layer = 4 * size.hidden ** 2 + 3 * size.hidden * size.intermediate
    return epochs * (size.layers * per_layer + params.embedded.vocab_size * size.hidden)


def build_model(params: Params, name: str, layout: Layout) -> dict:
    """Train model ``name`` as its ``build`` entry says (from scratch, or further from a parent)."""
    from transformers import AutoTokenizer

    from judgeaudit.models.scratch import build_llama  # torch and trl: only where a model is built
    from judgeaudit.training.trainers import sft

    build = params.models[name].build
    if build is None:
        raise ValueError(f"model {name!r} is a real checkpoint (spec), nothing to build")
    seed = params.seed + build.seed
    pre = params.embedded.pretrain
    args = pre if build.epochs is None else pre.model_copy(update={"epochs": build.epochs})
    if build.init_from:
        model = str(layout.models / build.init_from)
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(layout.tokenizer))
        size = params.embedded.sizes[build.size]
        model = build_llama(tokenizer, layers=size.layers, hidden=size.hidden, heads=size.heads,
                            intermediate=size.intermediate,
                            max_positions=params.embedded.max_positions, seed=seed)
    rows = corpus_rows(params, build.corpus_style, seed)
    summary = sft(model, layout.tokenizer, rows, layout.models / name, args, seed)
    return {"model": name, "style": build.corpus_style, "origin": build.init_from or build.size,
            **summary}
