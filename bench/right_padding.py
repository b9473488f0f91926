"""Scoring long prompts: the backend's right-padded batch with causal attention alone
(``TransformersModel._tail_logits``) vs a left-padded batch with its padding mask and
position ids (what it ran before), same model, same token batches, one run: seconds
per batch and the growth of the process's peak memory, each way in its own process
(peak RSS only grows). Verdict logits at each row's last position either way; their
largest difference is printed.

    python bench/right_padding.py [--lengths 256,1024,2048] [--batch 16]

A randomly initialised Llama (speed and memory do not depend on the weights) on the
embedded tokenizer (data/models/_tokenizer: `dvc repro bootstrap` first), long enough
for the prompts of real judge templates.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def _model_dir(tokenizer_dir: str, max_positions: int) -> str:
    from transformers import AutoTokenizer

    from judgeaudit.models.scratch import build_llama

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = build_llama(tok, layers=2, hidden=128, heads=4, intermediate=256, max_positions=max_positions, seed=0)
    out = tempfile.mkdtemp(prefix="bench-right-padding-")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _one(path: str, way: str, length: int, batch: int, reps: int) -> dict:
    """Time ``way`` in this process: {"seconds": per batch, "rss_mib": peak growth, "last": logits}."""
    import torch

    from judgeaudit.models import ModelSpec, load_model

    torch.set_num_threads(1)
    lm = load_model(ModelSpec(path=path, max_length=length, batch_size=batch), name="bench")
    gen = torch.Generator().manual_seed(0)
    lens = torch.randint(length - 64, length + 1, (batch,), generator=gen).tolist()
    lens[0] = length
    seqs = [torch.randint(5, len(lm.tokenizer), (n,), generator=gen).tolist() for n in lens]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(reps):
            if way == "right":
                last = torch.cat(lm._tail_logits(seqs, [1] * batch))
            else:
                ids, mask = lm._pad(seqs)
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                last = lm.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                logits_to_keep=1).logits[:, -1].float()
    return {"seconds": (time.perf_counter() - start) / reps,
            "rss_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024,
            "last": last.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", default="data/models/_tokenizer")
    ap.add_argument("--lengths", default="256,1024,2048")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", nargs=3, metavar=("PATH", "WAY", "LENGTH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        path, way, length = args.child
        print(json.dumps(_one(path, way, int(length), args.batch, args.reps)))
        return
    lengths = [int(x) for x in args.lengths.split(",")]
    path = _model_dir(args.tokenizer, max(lengths))
    try:
        _compare(path, lengths, args)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _compare(path: str, lengths: list[int], args: argparse.Namespace) -> None:
    import numpy as np

    print(f"batch {args.batch}, one torch thread, {args.reps} batches each way\n")
    print("| tokens | left + mask s/batch | right s/batch | speed-up | left peak MiB | right peak MiB | max |diff| |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for length in lengths:
        got = {way: json.loads(subprocess.run(
            [sys.executable, __file__, "--child", path, way, str(length), "--batch", str(args.batch),
             "--reps", str(args.reps)], check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            for way in ("left", "right")}
        left, right = got["left"], got["right"]
        diff = float(np.abs(np.array(left["last"]) - np.array(right["last"])).max())
        print(f"| {length} | {left['seconds']:.2f} | {right['seconds']:.2f} | {left['seconds'] / right['seconds']:.2f}x "
              f"| {left['rss_mib']:.0f} | {right['rss_mib']:.0f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
