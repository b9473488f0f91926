"""Generative pairwise verdicts in the seeds' judge format: the judge writes its
reasoning and ends with "[[A]]", "[[B]]" or "[[C]]" (a tie). The verdict is the FINAL
tag, as the prompt defines it, and a tag the judge quotes (inside a quotation, or copied
from a response it is judging: "B wrote 'output [[A]]'") is no verdict, so a response
that carries a fake verdict cannot cast it through a judge that quotes it. Outputs with
no verdict are retried once (sampled, so the retry can differ); what still fails is
recorded as "unparseable", never guessed and never dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from judgeaudit.models.base import LanguageModel
from judgeaudit.templates import GENERATIVE_TEMPLATE  # noqa: F401 -- importable from here, as before

UNPARSEABLE = "unparseable"
_TAG = re.compile(r"\[\[([ABC])\]\]")
_VERDICT = {"A": "A", "B": "B", "C": "tie"}


# a quotation on one line; a single quote opens after a non-word character and closes
# before one, so the apostrophes of "B's" and "don't" open nothing
_QUOTED = re.compile(r'"[^"\n]*"|\u201c[^\u201d\n]*\u201d|`[^`\n]*`|(?<!\w)\'[^\'\n]*\'(?!\w)')
_CONTEXT = 12  # characters before a tag that must match a response for the tag to count as copied


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: str | None  # "A", "B", "tie"; None: no verdict of the judge's own
    quoted: int  # tags that were quoted (from a response or inside a quotation), not cast


def read_verdict(text: str, responses: Sequence[str] = ()) -> ParsedVerdict:
    """The final verdict tag of ``text`` that the judge wrote itself. A tag is quoted when it
    lies inside a quotation holding more than the tag (the prompt's own format, ``"[[B]]"``,
    is a verdict), or when it and the text just before it on its line appear in one of
    ``responses``."""
    quotes = [m.span() for m in _QUOTED.finditer(text) if _TAG.fullmatch(m.group(0)[1:-1]) is None]
    own, quoted = [], 0
    for tag in _TAG.finditer(text):
        start, end = tag.span()
        line_start = text.rfind("\n", 0, start) + 1
        context = text[max(line_start, start - _CONTEXT):end]
        copied = start - line_start >= _CONTEXT and any(context in r for r in responses)
        if copied or any(a < start and end < b for a, b in quotes):
            quoted += 1
        else:
            own.append(tag.group(1))
    return ParsedVerdict(_VERDICT[own[-1]] if own else None, quoted)


def parse_verdict(text: str, responses: Sequence[str] = ()) -> str | None:
    """"A", "B" or "tie": the final verdict tag the judge wrote itself; None if there is none."""
    return read_verdict(text, responses).verdict


@dataclass(frozen=True)
class GenerativeVerdicts:
    verdicts: list[str]  # "A", "B", "tie" or "unparseable"
    outputs: list[str]  # the judge's last output per item
    attempts: list[int]  # 1, or 2 where the first output was unparseable
    quoted: list[int]  # per item: verdict tags the judge quoted (from a response or in quotes)

    @property
    def n_unparseable(self) -> int:
        return sum(v == UNPARSEABLE for v in self.verdicts)

    @property
    def n_quoting(self) -> int:
        """Outputs that quote a verdict tag instead of (or before) casting their own."""
        return sum(q > 0 for q in self.quoted)


def generative_verdicts(judge: LanguageModel, template: str, questions: Sequence[str],
                        answers_a: Sequence[str], answers_b: Sequence[str], *, max_new_tokens: int,
                        retry_temperature: float = 0.7, seed: int = 0) -> GenerativeVerdicts:
    """Greedy verdicts, and one sampled retry of each unparseable output."""
    prompts = [judge.format_prompt(template.format(question=q, answer_a=a, answer_b=b))
               for q, a, b in zip(questions, answers_a, answers_b)]
    outputs = judge.generate(prompts, max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)
    pairs = list(zip(answers_a, answers_b))
    parsed = [read_verdict(o, r) for o, r in zip(outputs, pairs)]
    attempts = [1] * len(prompts)
    retry = [i for i, v in enumerate(parsed) if v.verdict is None]
    if retry:
        again = judge.generate([prompts[i] for i in retry], max_new_tokens=max_new_tokens,
                               temperature=retry_temperature, seed=seed + 1)
        for i, text in zip(retry, again):
            outputs[i], parsed[i], attempts[i] = text, read_verdict(text, pairs[i]), 2
    return GenerativeVerdicts([v.verdict if v.verdict is not None else UNPARSEABLE for v in parsed],
                              outputs, attempts, [v.quoted for v in parsed])
