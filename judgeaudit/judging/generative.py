"""Generative pairwise verdicts in the seeds' judge format: the judge writes its
reasoning and ends with "[[A]]", "[[B]]" or "[[C]]" (a tie).

The rule: a verdict stands only when the judge's output carries exactly one distinct tag
of its own; the same tag written twice is one verdict, two distinct tags ("[[A]] or
[[B]]") are "conflicting tags [[A]] and [[B]]", none is "no verdict tag". A tag is not the
judge's own when it lies in quoted or echoed text: a fenced code block (``` or ~~~, to its
closing fence or, unclosed, to the end), inline code, a quotation in double, curly or
single quotes on one line (an apostrophe, as in "B's", opens none), or the tag and the 12
characters before it on its line copied from one of the responses judged. A code span or
quotation holding nothing but one tag (``"[[B]]"``, the prompt's own format) is the judge's
own. So a response carrying a fake verdict cannot cast it through a judge that quotes it,
and a tag mentioned after the verdict never replaces it. Outputs without a verdict are
retried once (sampled, so the retry can differ); what still fails is recorded as
"unparseable" with its reason, never guessed and never dropped. Parsing is linear in the
length of the output and of the responses."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from judgeaudit.models.base import LanguageModel
from judgeaudit.templates import GENERATIVE_TEMPLATE  # noqa: F401 -- importable from here, as before

UNPARSEABLE = "unparseable"
_TAG = re.compile(r"\[\[([ABC])\]\]")
_VERDICT = {"A": "A", "B": "B", "C": "tie"}

# quoted or echoed text, one regex scanned left to right so that a quote inside a code block
# (or a backtick inside a quotation) opens nothing; the named group holds the span's inside.
# A fence runs across lines; a single quote opens after a non-word character and closes
# before one, so the apostrophes of "B's" and "don't" open nothing
_QUOTED = re.compile(
    r"(?P<fence>```|~~~)(?P<fenced>.*?)(?:(?P=fence)|\Z)"
    r"|`(?P<code>[^`\n]*)`"
    r'|"(?P<double>[^"\n]*)"'
    r"|\u201c(?P<curly>[^\u201d\n]*)\u201d"
    r"|(?<!\w)'(?P<single>[^'\n]*)'(?!\w)", re.S)
_INSIDE = ("fenced", "code", "double", "curly", "single")
_CONTEXT = 12  # characters before a tag that must match a response for the tag to count as copied


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: str | None  # "A", "B", "tie"; None: unparseable
    quoted: int  # tags that were quoted (from a response or inside a quotation), not cast
    reason: str | None = None  # why there is no verdict: "no verdict tag", "conflicting tags ..."


def _quoted_spans(text: str) -> tuple[list[int], list[int]]:
    """Starts and ends of the quoted or echoed spans of ``text``, but those holding only a tag."""
    starts, ends = [], []
    for m in _QUOTED.finditer(text):
        inside = next(m.group(g) for g in _INSIDE if m.group(g) is not None)
        if _TAG.fullmatch(inside.strip()) is None:
            starts.append(m.start())
            ends.append(m.end())
    return starts, ends


def _copied_contexts(responses: Sequence[str]) -> set[str]:
    """Every tag in ``responses`` with the ``_CONTEXT`` characters before it: a set, so that
    looking a tag up costs the same however long the responses are."""
    return {r[m.start() - _CONTEXT:m.end()] for r in responses for m in _TAG.finditer(r)
            if m.start() >= _CONTEXT}


def _listed(tags: list[str]) -> str:
    named = [f"[[{t}]]" for t in tags]
    return ", ".join(named[:-1]) + " and " + named[-1]


def read_verdict(text: str, responses: Sequence[str] = ()) -> ParsedVerdict:
    """The one distinct verdict tag of ``text`` that the judge wrote itself (the rule above),
    the number of tags it quoted or copied from ``responses`` instead, and, where there is
    no verdict, the reason."""
    starts, ends = _quoted_spans(text)
    copied = _copied_contexts(responses)
    own: list[str] = []
    quoted = 0
    for tag in _TAG.finditer(text):
        start, end = tag.span()
        # the last span opening at or before the tag is the only one that can hold it (spans are disjoint)
        i = bisect.bisect_right(starts, start) - 1
        inside = i >= 0 and end <= ends[i]
        context = text[start - _CONTEXT:end] if start >= _CONTEXT else ""
        if inside or ("\n" not in context and context in copied):
            quoted += 1
        elif tag.group(1) not in own:
            own.append(tag.group(1))
    if len(own) == 1:
        return ParsedVerdict(_VERDICT[own[0]], quoted)
    if own:
        return ParsedVerdict(None, quoted, f"conflicting tags {_listed(own)}")
    return ParsedVerdict(None, quoted, f"no verdict tag outside quoted text ({quoted} quoted)" if quoted
                         else "no verdict tag")


def parse_verdict(text: str, responses: Sequence[str] = ()) -> str | None:
    """"A", "B" or "tie": the one verdict tag the judge wrote itself; None if there is none
    or there are conflicting ones (``read_verdict`` gives the reason)."""
    return read_verdict(text, responses).verdict


@dataclass(frozen=True)
class GenerativeVerdicts:
    verdicts: list[str]  # "A", "B", "tie" or "unparseable"
    outputs: list[str]  # the judge's last output per item
    attempts: list[int]  # 1, or 2 where the first output was unparseable
    quoted: list[int]  # per item: verdict tags the judge quoted (from a response or in quotes)
    reasons: list[str | None]  # per item: why it is unparseable ("no verdict tag", ...); None if parsed

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
                              outputs, attempts, [v.quoted for v in parsed], [v.reason for v in parsed])
