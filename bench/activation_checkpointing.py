"""Training with and without activation checkpointing, one run: SFT of a from-scratch
Llama of the embedded default's `small` size, then a reward head on it, each timed both
ways, and whether the weights come out bitwise equal. trl's configs turn checkpointing
on by default; `train.*.activation_checkpointing` (default false) says which the
pipeline uses.

    python bench/activation_checkpointing.py [--items 256] [--epochs 1]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import tempfile
import time
import warnings
from pathlib import Path

from safetensors.torch import load_file

from judgeaudit.config import TrainArgs
from judgeaudit.generation.corpus import make_items
from judgeaudit.generation.styles import render
from judgeaudit.models.scratch import build_llama, train_tokenizer
from judgeaudit.training.trainers import reward_model, sft


def _digest(folder: Path) -> str:
    weights = load_file(folder / "model.safetensors")
    return hashlib.md5(b"".join(weights[k].numpy().tobytes() for k in sorted(weights))).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--epochs", type=float, default=1.0)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    rng = random.Random(0)
    rows = [{"prompt": f"Q: {it.prompt}\nA:", "completion": " " + render(it, "formal", rng)}
            for it in make_items(args.items, 0)]
    pairs = [{"chosen": r["prompt"] + r["completion"], "rejected": r["prompt"] + " I cannot say."} for r in rows]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tok = train_tokenizer((r["prompt"] + r["completion"] for r in rows), 300, root / "tok")
        seconds, digests = {}, {}
        for on in (True, False):
            train = TrainArgs(epochs=args.epochs, lr=3e-3, batch_size=16, activation_checkpointing=on)
            model = build_llama(tok, layers=2, hidden=128, heads=4, intermediate=256, max_positions=256, seed=0)
            t0 = time.perf_counter()
            sft(model, root / "tok", rows, root / f"lm-{on}", train, seed=0)
            t1 = time.perf_counter()
            reward_model(root / f"lm-{on}", pairs, root / f"rm-{on}", train, seed=0)
            t2 = time.perf_counter()
            seconds[on] = (t1 - t0, t2 - t1)
            digests[on] = (_digest(root / f"lm-{on}"), _digest(root / f"rm-{on}"))
    for k, what in enumerate(("SFT", "reward model")):
        print(f"{what}: checkpointing {seconds[True][k]:.2f} s, without {seconds[False][k]:.2f} s "
              f"({seconds[True][k] / seconds[False][k]:.2f}x faster without); "
              f"weights bitwise equal: {digests[True][k] == digests[False][k]}")


if __name__ == "__main__":
    main()
