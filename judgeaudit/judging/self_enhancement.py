"""Self-enhancement, the one bias of the battery that needs the judge to write: its own
answer to each prompt, paired against another answer to the same prompt, so that the
judge's own outputs are among the responses it judges (``audits.bias_battery.
self_preference`` compares its preference for them with another judge's on the same pairs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeaudit.models.base import LanguageModel


def self_enhancement_items(model: LanguageModel, judge: str, items: pd.DataFrame, max_new_tokens: int = 256,
                           seed: int = 0) -> pd.DataFrame:
    """Pairs (``judging.benchmark.ITEM`` columns) of the judge's own greedy answer to each
    prompt of ``items`` (response_1, model_1 = ``judge``) against another answer to it
    (response_2): the item's right response where it is labelled "1" or "2", else its
    response_1. The label is None: which of the two is better is not known. An empty
    completion stays empty (it is the judge's answer, and it is judged as such)."""
    if items.empty:
        return items.assign(model_1=pd.Series(dtype=object))
    label = items["label"].to_numpy(object)
    take_2 = label == "2"
    other = np.where(take_2, items["response_2"], items["response_1"])
    other_model = np.where(take_2, items["model_2"], items["model_1"])
    prompts = [model.format_prompt(p) for p in items["prompt"]]
    own = model.generate(prompts, max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)
    return items.assign(response_1=[o.strip() for o in own], response_2=other, model_1=judge,
                        model_2=other_model, label=None, human_labels=None).reset_index(drop=True)
