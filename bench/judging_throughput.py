"""Judgments per second: batched logit verdicts (one forward pass per batch, log-probs
of " A"/" B") vs a naive one-at-a-time `generate` loop, same model, same items, one run.

    python bench/judging_throughput.py [--model data/models/gen-formal] [--n 256]
"""

from __future__ import annotations

import argparse
import time

from judgeaudit.config import load_params
from judgeaudit.generation.corpus import make_items
from judgeaudit.judging.pairwise import prompted_probabilities
from judgeaudit.models import ModelSpec, load_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="data/models/gen-formal")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    template = load_params().judge.prompt_template
    spec = ModelSpec(path=args.model, chat_template="Q: {prompt}\nA:", batch_size=args.batch_size,
                     device=args.device)
    model = load_model(spec, name="bench")
    items = make_items(args.n, seed=0)
    qs = [it.prompt for it in items]
    a = [f"The answer is {it.fact}." for it in items]
    b = [f"Answer: {it.fact}." for it in items]

    prompted_probabilities(model, template, qs[:8], a[:8], b[:8])  # warm-up
    t0 = time.perf_counter()
    prompted_probabilities(model, template, qs, a, b)
    batched = args.n / (time.perf_counter() - t0)

    prompts = [model.format_prompt(template.format(question=q, answer_a=x, answer_b=y))
               for q, x, y in zip(qs, a, b)]
    t0 = time.perf_counter()
    for p in prompts:  # the naive judge: one prompt at a time, decode a short verdict
        model.generate([p], max_new_tokens=4)
    naive = args.n / (time.perf_counter() - t0)
    print(f"model={args.model} device={args.device} n={args.n} batch={args.batch_size}")
    print(f"batched logit verdicts: {batched:8.1f} judgments/s")
    print(f"naive generate loop:    {naive:8.1f} judgments/s")
    print(f"ratio batched/naive:    {batched / naive:8.1f}x")


if __name__ == "__main__":
    main()
