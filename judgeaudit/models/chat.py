"""A whole conversation (OpenAI's chat messages) as the one prompt a model reads.

With the spec's ``chat_template`` "auto" and a tokenizer that has a chat template, the
tokenizer's template renders it (``apply_chat_template``, as a serving engine does), and
what the template refuses (a system message some models cannot take, turns out of order)
is a ``ChatError`` carrying the template's own words.

Otherwise the model knows one format, a string with one ``{prompt}`` field (the embedded
judges' "Q: {prompt}\\nA:"), and the conversation is joined in this plain format:

- a system (or developer) message is a paragraph of its own: its text, then a blank line;
- a user message is the format filled with its text ("Q: ...\\nA:"); consecutive user
  messages are joined by a blank line first;
- an assistant message follows the user turn before it, after a space (none where the
  format ends in whitespace), and ends with a newline.

So one user message gives exactly ``format.format(prompt=text)``, the prompt a single
request has always had."""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_FORMAT = "Q: {prompt}\nA:"  # judgeaudit.models.base.apply_template's, for "auto" without one


class ChatError(ValueError):
    """A conversation the model's chat template will not take."""


def render_chat(tokenizer, template: str, messages: Sequence[dict[str, str]]) -> str:
    """``messages`` ([{"role", "content"}], the last one the user's) as one prompt."""
    if template == "auto" and getattr(tokenizer, "chat_template", None):
        from jinja2 import TemplateError

        turns = [{"role": "system" if m["role"] == "developer" else m["role"], "content": m["content"]}
                 for m in messages]
        try:
            return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        except (TemplateError, ValueError) as exc:
            raise ChatError(f"the model's chat template refuses this conversation: {exc}") from None
    return _plain(DEFAULT_FORMAT if template == "auto" else template, messages)


def _plain(fmt: str, messages: Sequence[dict[str, str]]) -> str:
    out, user = [], []  # the text so far; the user messages of the turn being gathered

    def close_turn() -> None:
        if user:
            out.append(fmt.format(prompt="\n\n".join(user)))
            user.clear()

    for m in messages:
        if m["role"] == "user":
            user.append(m["content"])
            continue
        close_turn()
        if m["role"] == "assistant":
            gap = "" if not out or out[-1][-1:].isspace() else " "
            out.append(f"{gap}{m['content']}\n")
        else:  # system, developer
            out.append(f"{m['content']}\n\n")
    close_turn()
    return "".join(out)
