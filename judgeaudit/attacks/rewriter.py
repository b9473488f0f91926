"""Model-based presentation attacks: a generator rewrites the response with a prompt
template (length expansion, sentiment rewrite). Without a configured rewriter, or for
attacks it has no template for, the rule-based attacks apply."""

from __future__ import annotations

from collections.abc import Sequence

from judgeaudit.attacks.presentation import ATTACKS
from judgeaudit.attacks.transforms import paraphrase
from judgeaudit.models.base import LanguageModel

# what an empty model rewrite falls back to, per rewrite
RULES = {**ATTACKS, "paraphrase": paraphrase}


class ModelRewriter:
    """Rewrites texts in batches; an empty rewrite falls back to the rule-based one."""

    def __init__(self, model: LanguageModel, templates: dict[str, str], max_new_tokens: int = 256) -> None:
        self.model, self.templates, self.max_new_tokens = model, templates, max_new_tokens

    def rewrite(self, name: str, texts: Sequence[str]) -> list[str]:
        prompts = [self.model.format_prompt(self.templates[name].format(response=t)) for t in texts]
        outs = self.model.generate(prompts, max_new_tokens=self.max_new_tokens)
        return [o if o.strip() else RULES[name](t) for o, t in zip(outs, texts)]


def attack_texts(name: str, texts: Sequence[str], rewriter: ModelRewriter | None = None) -> list[str]:
    """Apply attack ``name`` to every text, through the rewriter where it has a template."""
    if rewriter is not None and name in rewriter.templates:
        return rewriter.rewrite(name, texts)
    return [ATTACKS[name](t) for t in texts]

