"""Stage ``bootstrap``: the prompt table, the tokenizer and the embedded models (real
checkpoints are left as they are). Each model is built as soon as its parent is (not a
wave at a time), the longest first."""

from __future__ import annotations

import queue

from judgeaudit.config import Params
from judgeaudit.layout import Layout
from judgeaudit.pipeline import bootstrap, prompts
from judgeaudit.stagekit.declare import MODELS, Stage
from judgeaudit.stagekit.io import write
from judgeaudit.stagekit.pool import Pool
from judgeaudit.schemas.validate import validate_table
from judgeaudit.tables import write_json

STAGE = Stage(name="bootstrap", params=MODELS, outs=("prompts", "models"), pool=True)


def run(params: Params, layout: Layout, tables: dict, pool: Pool) -> list[dict]:
    if params.corpus.prompts_file:
        prompts.make_prompts(params)  # the user's file, checked before anything is built
    table = validate_table(prompts.make_prompts(params), "prompts", "bootstrap",
                           quarantine_dir=layout.quarantine)
    built = [n for n, m in params.models.items() if m.build is not None]
    summaries = []
    if built:
        bootstrap.build_tokenizer(params, layout)
        done: dict[str, dict] = {}
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def submit(names: list[str]) -> dict:
            running = {}
            for name in sorted(names, key=lambda n: -bootstrap.build_cost(params, n)):  # longest first
                future = pool.submit(bootstrap.build_model, params=params, name=name, layout=layout)
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
