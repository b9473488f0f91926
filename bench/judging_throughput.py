"""Judgments per second: batched logit verdicts (one forward pass per batch, log-probs
of " A"/" B") vs a naive judge that calls `generate` one item at a time, same model,
same items, one run. The naive judge is timed twice: decoding only the shortest
generative verdict ("[[A]]", no reasoning: a lower bound on its cost), and with a
brief rationale before it (--rationale-tokens), as the seeds' judge prompt asks.

    python bench/judging_throughput.py [--model data/models/gen-formal] [--n 512] [--device cuda]
    python bench/judging_throughput.py --scratch 512,8   # a wider, deeper Llama of the same
                                                          # tokenizer (random weights: speed only)
"""

from __future__ import annotations

import argparse
import time

from judgeaudit.config import load_params
from judgeaudit.generation.corpus import make_items
from judgeaudit.judging.pairwise import prompted_probabilities
from judgeaudit.models import ModelSpec, load_model


def _naive_rate(model, prompts: list[str], new_tokens: int) -> float:
    t0 = time.perf_counter()
    for p in prompts:  # one prompt at a time, greedy decode
        model.generate([p], max_new_tokens=new_tokens)
    return len(prompts) / (time.perf_counter() - t0)


def _scratch_model(tokenizer_dir: str, hidden: int, layers: int) -> str:
    import tempfile

    from transformers import AutoTokenizer

    from judgeaudit.models.scratch import build_llama

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = build_llama(tok, layers=layers, hidden=hidden, heads=max(1, hidden // 64), intermediate=4 * hidden,
                        max_positions=512, seed=0)
    out = tempfile.mkdtemp(prefix="bench-llama-")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def add_scratch_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--scratch", default=None, metavar="HIDDEN,LAYERS",
                    help="time a randomly initialised Llama of this size instead (speed does not depend "
                         "on the weights), built on --model's tokenizer")


def scratch_or_model(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with ``model`` replaced by a scratch Llama's folder when --scratch is given."""
    if args.scratch:
        args.model = _scratch_model(args.model, *map(int, args.scratch.split(",")))
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="data/models/gen-formal")
    ap.add_argument("--n", type=int, default=512, help="items judged by the batched judge")
    ap.add_argument("--n-naive", type=int, default=64, help="items judged by the naive loop (rate per item)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--rationale-tokens", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    add_scratch_option(ap)
    args = scratch_or_model(ap.parse_args())
    template = load_params().judge.prompt_template
    spec = ModelSpec(path=args.model, chat_template="Q: {prompt}\nA:", batch_size=args.batch_size,
                     device=args.device, dtype=args.dtype)
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
               for q, x, y in zip(qs, a, b)][:args.n_naive]
    verdict_tokens = len(model.tokenizer(" [[A]]", add_special_tokens=False)["input_ids"])
    naive_short = _naive_rate(model, prompts, verdict_tokens)
    naive_long = _naive_rate(model, prompts, args.rationale_tokens + verdict_tokens)
    print(f"model={args.model} device={args.device} dtype={args.dtype} batch={args.batch_size} "
          f"n_batched={args.n} n_naive={len(prompts)}")
    print(f"batched logit verdicts:                    {batched:9.1f} judgments/s")
    print(f"naive generate, verdict only ({verdict_tokens} tokens):     {naive_short:9.1f} judgments/s"
          f"   ratio {batched / naive_short:6.1f}x")
    print(f"naive generate, rationale + verdict ({args.rationale_tokens + verdict_tokens} tokens): "
          f"{naive_long:9.1f} judgments/s   ratio {batched / naive_long:6.1f}x")


if __name__ == "__main__":
    main()
