"""Embeddings cached on disk by text: a frozen encoder gives a text the same vector every
time, so an audit re-run (or a bench) embeds only the texts it has not seen."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from judgeaudit.progress import Steps


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """``embed(texts)`` through a cache file keyed by the encoder's identity; the encoder
    is built only when a text is missing."""

    def __init__(self, make_encoder: Callable[[], object], identity: str, cache_dir: str | Path | None) -> None:
        self.make_encoder, self._encoder = make_encoder, None
        self.path = (Path(cache_dir) / f"{_digest(identity)[:16]}.npz") if cache_dir else None
        self.vectors: dict[str, np.ndarray] = {}
        self.hits = self.misses = 0
        if self.path is not None and self.path.is_file():
            with np.load(self.path) as saved:
                self.vectors = dict(zip(saved["keys"].tolist(), saved["vectors"]))

    def embed(self, texts: Sequence[str], steps: Steps | None = None) -> np.ndarray:
        """The texts' vectors; ``steps``: the encoder's batches, where any text is missing."""
        keys = [_digest(t) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts) if k not in self.vectors}.items())
        self.hits, self.misses = len(keys) - len(missing), len(missing)
        if missing:
            if self._encoder is None:
                self._encoder = self.make_encoder()
            new = self._encoder.embed([t for _, t in missing], steps)
            self.vectors.update({k: v for (k, _), v in zip(missing, new)})
            self._save()
        if not keys:
            return np.zeros((0, 0))
        return np.stack([self.vectors[k] for k in keys])

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(self.vectors)), vectors=np.stack(list(self.vectors.values())))
        os.replace(tmp, self.path)
