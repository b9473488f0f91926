"""Stage ``bootstrap``: the prompt table, the tokenizer and the embedded models (real
checkpoints are left as they are). Each model is built as soon as its parent is (not a
wave at a time), the longest first.

The prompt table every stage starts from is the user's file (``corpus.prompts_file``) or
prompts generated from templates."""

from __future__ import annotations

import queue
import random
from pathlib import Path

import pandas as pd

from judgeaudit.config import Params
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.styles import STYLES, render
from judgeaudit.layout import Layout
from judgeaudit.schemas.validate import validate_table
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.tables import read_table, write_json

STAGE = Stage(name="bootstrap", params=MODELS, outs=("prompts", "models"), pool=True)


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

PROMPT_COLUMNS = ["prompt_id", "split", "prompt"]


def make_prompts(params: Params) -> pd.DataFrame:
    """Train and eval prompts: the user's file when given, else generated from templates."""
    if params.corpus.prompts_file:
        frame = read_table(params.corpus.prompts_file, PROMPT_COLUMNS)
        path = params.corpus.prompts_file
        bad = frame.index[~frame["split"].isin(["train", "eval"])].tolist()
        if bad:
            raise ValueError(f"{path}: row {bad[0] + 1}: field 'split' must be 'train' or 'eval', "
                             f"got {frame.loc[bad[0], 'split']!r}")
        frame = frame.assign(category=frame.get("category", "user"), fact=frame.get("fact", ""))
        return frame[["prompt_id", "split", "category", "prompt", "fact"]].astype(str)
    c = params.corpus
    rows = [dict(split=split, **vars(it)) for split, items in (
        ("train", make_items(c.n_train_prompts, params.seed + 1, "t", c.prompt_categories)),
        ("eval", make_items(c.n_eval_prompts, params.seed + 2, "e", c.prompt_categories)))
        for it in items]
    return pd.DataFrame(rows)[["prompt_id", "split", "category", "prompt", "fact"]]


def run(params: Params, layout: Layout, tables: dict, pool: Pool) -> list[dict]:
    if params.corpus.prompts_file:
        make_prompts(params)  # the user's file, checked before anything is built
    table = validate_table(make_prompts(params), "prompts", "bootstrap",
                           quarantine_dir=layout.quarantine)
    built = [n for n, m in params.models.items() if m.build is not None]
    summaries = []
    if built:
        build_tokenizer(params, layout)
        done: dict[str, dict] = {}
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def submit(names: list[str]) -> dict:
            running = {}
            for name in sorted(names, key=lambda n: -build_cost(params, n)):  # longest first
                future = pool.submit(build_model, params=params, name=name, layout=layout)
                future.add_done_callback(finished.put)
                running[future] = name
            return running

        # each model as soon as its parent is built (not a wave at a time), the longest first
        running = submit([n for n in built if params.models[n].build.init_from not in built])
        while running:
            future = finished.get()
            done[running.pop(future)] = future.result()
            running |= submit([n for n in built if n not in done and n not in running.values()
                               and params.models[n].build.init_from in done])
        summaries = [done[n] for n in built]  # params order
    write(table, layout.prompts)
    write_json(summaries, layout.models / "_summary.json")
    return summaries
