"""Generative pairwise verdicts in the seeds' judge format: the judge writes its
reasoning and ends with "[[A]]", "[[B]]" or "[[C]]" (a tie). Parsing is strict: exactly
one distinct verdict tag, or the output is unparseable. Unparseable outputs are retried
once (sampled, so the retry can differ); what still fails is recorded as
"unparseable", never guessed and never dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from judgeaudit.models.base import LanguageModel

GENERATIVE_TEMPLATE = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI "
    "assistants to the user question displayed below. Avoid any position biases and do not let the "
    "length of the responses or the names of the assistants influence your evaluation. After "
    "providing your explanation, output your final verdict by strictly following this format: "
    "\"[[A]]\" if assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie.\n\n"
    "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n"
    "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\n{answer_b}\n"
    "[The End of Assistant B's Answer]")

UNPARSEABLE = "unparseable"
_TAG = re.compile(r"\[\[([ABC])\]\]")
_VERDICT = {"A": "A", "B": "B", "C": "tie"}


def parse_verdict(text: str) -> str | None:
    """"A", "B" or "tie" when the text holds exactly one distinct verdict tag, else None."""
    tags = set(_TAG.findall(text))
    return _VERDICT[tags.pop()] if len(tags) == 1 else None


@dataclass(frozen=True)
class GenerativeVerdicts:
    verdicts: list[str]  # "A", "B", "tie" or "unparseable"
    outputs: list[str]  # the judge's last output per item
    attempts: list[int]  # 1, or 2 where the first output was unparseable

    @property
    def n_unparseable(self) -> int:
        return sum(v == UNPARSEABLE for v in self.verdicts)


def generative_verdicts(judge: LanguageModel, template: str, questions: Sequence[str],
                        answers_a: Sequence[str], answers_b: Sequence[str], *, max_new_tokens: int,
                        retry_temperature: float = 0.7, seed: int = 0) -> GenerativeVerdicts:
    """Greedy verdicts, and one sampled retry of each unparseable output."""
    prompts = [judge.format_prompt(template.format(question=q, answer_a=a, answer_b=b))
               for q, a, b in zip(questions, answers_a, answers_b)]
    outputs = judge.generate(prompts, max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)
    parsed = [parse_verdict(o) for o in outputs]
    attempts = [1] * len(prompts)
    retry = [i for i, v in enumerate(parsed) if v is None]
    if retry:
        again = judge.generate([prompts[i] for i in retry], max_new_tokens=max_new_tokens,
                               temperature=retry_temperature, seed=seed + 1)
        for i, text in zip(retry, again):
            outputs[i], parsed[i], attempts[i] = text, parse_verdict(text), 2
    return GenerativeVerdicts([v if v is not None else UNPARSEABLE for v in parsed], outputs, attempts)
