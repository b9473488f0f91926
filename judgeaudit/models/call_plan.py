"""A dry run's stand-in for a judge: ``PlannedCalls`` takes every call a judging run would
make (the same requests, built as the openai backend builds them) and answers none, so
that what a run would send, its prompt tokens and its cost are known before any is spent.

Tokens are counted with a tokenizer where one is given, else estimated
(``call_record.token_counter``). A chat endpoint applies its own chat template to the
prompt; the few tokens the template adds are not counted. Completion tokens are an upper
bound: ``max_tokens`` of each generated reply, one per verdict, none for a scored text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from judgeaudit.models.base import LanguageModel, apply_template
from judgeaudit.models.call_record import (MISSING, Call, CallJournal, call_key, echo_call, generate_call,
                                            verdict_call)
from judgeaudit.models.spec import ModelSpec

# a verdict every generative parser reads, so that no dry-run verdict asks for the retry
# an unparseable one gets
PLANNED_VERDICT = "[[A]]"


class PlannedCalls(LanguageModel):
    """Records the calls asked of it (``calls``); ``journal``: an openai judge's recorded
    calls, to tell the calls a run would still send from those it would answer from records."""

    def __init__(self, spec: ModelSpec, count: Callable[[str], int], journal: CallJournal | None = None,
                 name: str = "") -> None:
        super().__init__(spec, name)
        self.count, self.journal = count, journal
        self.endpoint = spec.backend == "openai"
        self.chat = self.endpoint and spec.chat_template == "auto"
        self.calls: list[Call] = []
        self._tokenizer = None

    def format_prompt(self, prompt: str) -> str:
        if self.endpoint:
            return prompt if self.chat else self.spec.chat_template.format(prompt=prompt)
        if self.spec.chat_template != "auto":
            return self.spec.chat_template.format(prompt=prompt)
        if self._tokenizer is None:  # a local judge's own chat template
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.spec.path)
        return apply_template(self._tokenizer, "auto", prompt)

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float = 0.0,
                 seed: int = 0) -> list[str]:
        self.calls += [generate_call(self.chat, p, max_new_tokens, temperature, seed) for p in prompts]
        return [PLANNED_VERDICT] * len(prompts)

    def next_token_logprobs(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        self.calls += [verdict_call(self.chat, p, self.spec.top_logprobs) for p in prompts]
        return np.zeros((len(prompts), len(candidates)))

    def completion_logprobs(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        for prompt, completion in zip(prompts, completions):
            # the space the openai backend puts before a completion, so the requests are its own
            completion = " " + completion if completion and not completion[0].isspace() else completion
            self.calls.append(echo_call(prompt + completion))
        return np.zeros((len(prompts), 2))

    def summary(self, price_per_mtok: tuple[float, float] | None = None) -> dict:
        """Requests (an endpoint's distinct ones), prompt tokens and the completion tokens'
        upper bound, of all calls and
        of those not yet recorded (the ones a run would send); the cost of those in dollars
        at ``price_per_mtok`` (input, output per million tokens) where given."""
        # a call made twice is sent once: the second is answered from the first's record
        calls = list({call_key("", c): c for c in self.calls}.values()) if self.endpoint else self.calls
        todo = [c for c in calls if self.journal is None or self.journal.answer(c)[1] is MISSING]
        out = {"requests": len(calls), "to_send": len(todo),
               "prompt_tokens": sum(self.count(c.prompt) for c in calls),
               "prompt_tokens_to_send": sum(self.count(c.prompt) for c in todo),
               "completion_tokens_max_to_send": sum(c.max_tokens for c in todo), "cost_usd": None}
        if price_per_mtok is not None:
            p_in, p_out = price_per_mtok
            out["cost_usd"] = round((out["prompt_tokens_to_send"] * p_in
                                     + out["completion_tokens_max_to_send"] * p_out) / 1e6, 6)
        return out
