"""SFT scoring only the labelled positions vs every position, one run: the default run's
BOAT contamination (the `boat.model` student fine-tuned on every benchmark's test items,
one-token completions after long prompts) trained both ways with trl's SFTTrainer, timed,
with each run's final training loss and the largest weight difference between the two.
trl's fused LM head scores every position on devices without Triton; judgeaudit.training.
trainers makes it score the labelled ones only on CPU (same loss and gradients: tests/
test_trainers.py). After `dvc repro` (it reads data/models).

    python bench/sft_labelled_positions.py [--epochs 10] [--params params.yaml] [--root data]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
import trl.trainer.utils as fused
from safetensors.torch import load_file

import judgeaudit.stages.boat as boat
from judgeaudit.config import load_params
from judgeaudit.layout import Layout

LABELLED_ONLY = fused._use_triton  # the pipeline's choice (judgeaudit.training.trainers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=10, help="contamination epochs (the default run: 30)")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--root", default="data")
    args = ap.parse_args()
    layout = Layout(Path(args.root))
    params = _epochs(load_params(args.params), args.epochs)
    seconds, weights, summaries = {}, {}, []
    train = boat.sft
    boat.sft = lambda *a, **kw: summaries.append(train(*a, **kw))  # keeps each run's training loss
    with tempfile.TemporaryDirectory() as tmp:
        boat.contaminate(_epochs(params, 1), layout, Path(tmp) / "warm-up")  # imports, first calls: untimed
        summaries.clear()
        for name, choice in (("labelled only", LABELLED_ONLY), ("every position", LABELLED_ONLY.original)):
            fused._use_triton = choice
            out = Path(tmp) / name.replace(" ", "-")
            started = time.perf_counter()
            boat.contaminate(params, layout, out)
            seconds[name] = time.perf_counter() - started
            weights[name] = load_file(out / "model.safetensors")
    fused._use_triton = LABELLED_ONLY
    a, b = weights.values()
    diff = max((a[k] - b[k]).abs().max().item() for k in a)
    print(f"BOAT contamination SFT, {args.epochs} epochs, {torch.get_num_threads()} torch threads")
    for name, summary in zip(seconds, summaries):
        print(f"  {name:15s} {seconds[name]:7.1f} s  {summary['steps']} steps, "
              f"mean training loss {summary['train_loss']:.4f}")
    print(f"  speed-up {seconds['every position'] / seconds['labelled only']:.2f}x; largest weight difference "
          f"{diff:.2g} (rounding, amplified by Adam over the steps: tests/test_trainers.py checks the "
          f"first step's gradients are equal)")


def _epochs(params, epochs: int):
    cfg = params.boat.contaminate.model_copy(update={"epochs": epochs})
    return params.model_copy(update={"boat": params.boat.model_copy(update={"contaminate": cfg})})


if __name__ == "__main__":
    main()
