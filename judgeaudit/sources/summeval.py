"""SummEval (Fabbri et al., 2021): summaries of CNN/DailyMail articles with expert
scores 1-5 for coherence, consistency, fluency and relevance, the human reference of
the score-range audit when ../shared/data holds it.

Reads the released ``model_annotations.aligned.paired.jsonl`` (fields ``id``,
``model_id``, ``text``, ``decoded``, ``expert_annotations``: one dict per annotator)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgeaudit.tables import numbered_jsonl
from judgeaudit.tables import InputError

ASPECTS = ("coherence", "consistency", "fluency", "relevance")
FILE = "model_annotations.aligned.paired.jsonl"
QUESTION = "Summarise the following news article.\n\n{article}"


def summeval_items(path: str | Path, aspect: str = "relevance", max_chars: int = 2000,
                  n_items: int | None = None) -> pd.DataFrame:
    """item_id, question, answer, reference: one row per (article, system summary); the
    reference is the mean expert score for ``aspect``. ``path``: the file or its folder."""
    if aspect not in ASPECTS:
        raise InputError(f"unknown SummEval aspect {aspect!r}; known: {list(ASPECTS)}")
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    if not path.is_file():
        raise InputError(f"{path}: no such SummEval file")
    rows = []
    for k, rec in numbered_jsonl(path):
        for field in ("id", "model_id", "text", "decoded", "expert_annotations"):
            if field not in rec:
                raise InputError(f"{path}: line {k}: missing field {field!r}")
        scores = [a.get(aspect) for a in rec["expert_annotations"]]
        if not scores or any(not isinstance(s, (int, float)) for s in scores):
            raise InputError(f"{path}: line {k}: field 'expert_annotations' lacks numeric {aspect!r} scores")
        rows.append({"item_id": f"{rec['id']}/{rec['model_id']}", "category": "summeval",
                     "question": QUESTION.format(article=rec["text"][:max_chars]), "answer": rec["decoded"],
                     "reference": float(np.mean(scores))})
    frame = pd.DataFrame(rows)
    if n_items is not None and n_items < len(frame):
        frame = frame.sample(n=n_items, random_state=0).sort_index().reset_index(drop=True)
    return frame
