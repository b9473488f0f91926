"""float32 vs bfloat16 mixed precision (params.yaml's ``precision``) on the embedded model
sizes, in one run: seconds per scoring forward pass (one right-padded batch of 64 rows, 200
tokens wide, the logits of the last 8 positions, as ``TransformersModel._tail_logits`` scores) and per training step
(32 rows of 48 tokens, the bootstrap stage's batches of short items: forward, backward and
AdamW, under autocast as the Trainer's ``bf16`` would run it; the project trains in float32), on
one torch thread (a stage's worker) unless ``--threads``; the two ways alternate, ``--reps``
times each, and the median is printed with the ratio. Also the largest and mean difference
of the scored log-probs. Random weights: speed does not depend on them.

    python bench/precision.py [--reps 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
import yaml
from transformers import LlamaConfig, LlamaForCausalLM

from judgeaudit import precision

ROOT = Path(__file__).resolve().parents[1]


def _model(size: dict, vocab: int, positions: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=size["hidden"], intermediate_size=size["intermediate"],
                         num_hidden_layers=size["layers"], num_attention_heads=size["heads"],
                         num_key_value_heads=size["heads"], max_position_embeddings=positions,
                         tie_word_embeddings=True)
    return LlamaForCausalLM(config)


def _alternated(fn, reps: int) -> tuple[float, float]:
    """The median seconds of ``fn("float32")`` and ``fn("bfloat16")``, called in turn."""
    times: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    for _ in range(reps):
        for way, seen in times.items():
            start = time.perf_counter()
            fn(way)
            seen.append(time.perf_counter() - start)
    return statistics.median(times["float32"]), statistics.median(times["bfloat16"])


def _scoring(size: dict, vocab: int, positions: int, reps: int) -> tuple[float, float, float, float]:
    ids = torch.randint(3, vocab, (64, 200), generator=torch.Generator().manual_seed(1))
    model = _model(size, vocab, positions).train(False)

    @torch.inference_mode()
    def score(way: str) -> torch.Tensor:
        os.environ[precision.VARIABLE] = way
        with precision.scoring("cpu"):  # what the backend's scoring passes run under
            return torch.log_softmax(model(input_ids=ids, logits_to_keep=8).logits.float(), dim=-1)

    diff = (score("float32") - score("bfloat16")).abs()
    return (*_alternated(score, reps), diff.max().item(), diff.mean().item())


def _training(size: dict, vocab: int, positions: int, reps: int) -> tuple[float, float]:
    ids = torch.randint(3, vocab, (32, 48), generator=torch.Generator().manual_seed(2))
    runs = {}
    for way in ("float32", "bfloat16"):
        model = _model(size, vocab, positions).train()
        runs[way] = (model, torch.optim.AdamW(model.parameters(), lr=1e-3))

    def step(way: str) -> None:
        model, opt = runs[way]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=way == "bfloat16"):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()

    for way in runs:
        step(way)  # warm-up: the first step allocates the optimizer's state
    return _alternated(step, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    embedded = yaml.safe_load((ROOT / "params.yaml").read_text())["embedded"]
    vocab, positions = embedded["vocab_size"], embedded["max_positions"]
    print(f"CPU bfloat16 instructions: {precision.native_bf16()}; torch {torch.__version__}, "
          f"{args.threads} thread(s), median of {args.reps}")
    print("| size | scoring fp32 s | bf16 s | ratio | max / mean abs diff of log-probs | training step fp32 s | bf16 s | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, size in embedded["sizes"].items():
        f32, b16, top, mean = _scoring(size, vocab, positions, args.reps)
        t32, t16 = _training(size, vocab, positions, args.reps)
        print(f"| {name} | {f32:.3f} | {b16:.3f} | {f32 / b16:.2f}x | {top:.3f} / {mean:.4f} "
              f"| {t32:.3f} | {t16:.3f} | {t32 / t16:.2f}x |")


if __name__ == "__main__":
    main()
