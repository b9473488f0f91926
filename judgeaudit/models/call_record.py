"""Every call a judge makes to its endpoint, recorded: an append-only JSONL journal, one
line per call written and flushed as the reply arrives (so a killed run loses nothing it
recorded; a line cut by the kill is skipped on reading), read back as one table.

A call is keyed by the judge's identity, the endpoint kind (chat, completion, echo), the
prompt as sent and the decoding settings; a key recorded ``ok`` is never asked again, a
``failed`` one is. Each row keeps the request, the value read from the reply, the status
and its reason, the model name and ``system_fingerprint`` the endpoint reported, its token
``usage`` where given, and the time. Lines of the older response cache (``{"k", "v"}``)
in the same file are still read: a call found only there is answered from it and
recorded anew (``origin`` "cache"), so old caches migrate as they are used.

``TokenBudget`` caps the tokens one run spends (prompt + completion: as the endpoint's
``usage`` reports them, else counted): a request that could take the run past the cap is
not sent, and ``BudgetExhausted`` stops the run with what was done recorded.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pandas as pd

OK, FAILED = "ok", "failed"
MISSING = object()  # no recorded answer
# a rough count where no tokenizer is given: English text averages about four characters
# per token under the BPE vocabularies of GPT-style models (OpenAI's rule of thumb)
CHARS_PER_TOKEN = 4.0
COLUMNS = ["key", "identity", "kind", "prompt", "max_tokens", "temperature", "seed", "logprobs", "top_logprobs",
           "echo", "value", "status", "reason", "model", "system_fingerprint", "prompt_tokens",
           "completion_tokens", "attempts", "time", "origin"]


class Call(NamedTuple):
    """One request as the endpoint gets it: ``kind`` chat, completion or echo (a completion
    scoring its prompt), the prompt as sent, the decoding settings."""

    kind: str
    prompt: str
    settings: dict

    @property
    def max_tokens(self) -> int:
        return int(self.settings.get("max_tokens", 0))


def generate_call(chat: bool, prompt: str, max_tokens: int, temperature: float, seed: int) -> Call:
    """A text completion's request."""
    return Call("chat" if chat else "completion", prompt,
                {"max_tokens": max_tokens, "temperature": temperature, "seed": seed})


def verdict_call(chat: bool, prompt: str, top_logprobs: int) -> Call:
    """A one-token verdict's request, with its top log-probs."""
    return Call("chat" if chat else "completion", prompt,
                {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": top_logprobs})


def echo_call(text: str) -> Call:
    """The request for the log-probs of ``text`` itself (prompt and completion together)."""
    return Call("echo", text, {"max_tokens": 0, "echo": True, "logprobs": 0})


def call_key(identity: str, call: Call) -> str:
    """sha256 of the judge's identity, the endpoint kind, the prompt and the settings."""
    return hashlib.sha256(json.dumps([identity, call.kind, call.prompt, call.settings],
                                     sort_keys=True).encode()).hexdigest()


def first_words(text: str, n: int = 8) -> str:
    """The first ``n`` words of ``text``, on one line."""
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def token_counter(tokenizer: str | Path | None) -> Callable[[str], int]:
    """Tokens in a text: by the tokenizer in a local folder (a Hugging Face tokenizer), or,
    without one, the estimate of ``CHARS_PER_TOKEN`` characters a token."""
    if tokenizer is None:
        return lambda text: max(1, round(len(text) / CHARS_PER_TOKEN)) if text else 0
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer))
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


class BudgetExhausted(RuntimeError):
    """The next request could take the run past its token budget; nothing more is sent."""


class TokenBudget:
    """At most ``cap`` tokens (prompt + completion) spent by one run's requests. A request
    reserves its prompt's tokens and its ``max_tokens`` before it is sent; the reply's
    usage (or the count of what came back) replaces the reservation."""

    def __init__(self, cap: int, count: Callable[[str], int]) -> None:
        self.cap, self.count, self.spent, self.lock = cap, count, 0, threading.Lock()

    def reserve(self, call: Call) -> int:
        need = self.count(call.prompt) + call.max_tokens
        with self.lock:
            if self.spent + need > self.cap:
                raise BudgetExhausted(f"token budget of {self.cap} reached: {self.spent} tokens spent, the next "
                                      f"request needs up to {need}; what was done is recorded, rerun with a "
                                      "higher --budget to resume")
            self.spent += need
        return need

    def settle(self, reserved: int, used: int) -> None:
        with self.lock:
            self.spent += used - reserved


class CallJournal:
    """The recorded calls of one judge (``identity``) in the JSONL file ``path`` (None: kept
    in memory only); thread-safe. ``replay``: the endpoint is never called."""

    def __init__(self, path: Path | None, identity: str, replay: bool = False,
                 budget: TokenBudget | None = None) -> None:
        self.path, self.identity, self.replay, self.budget = path, identity, replay, budget
        self.rows: list[dict] = []
        self.ok: dict[str, dict] = {}
        self.legacy: dict[str, object] = {}
        self.earlier = 0  # rows recorded by earlier runs
        self.hits = 0  # calls of this run answered from the records
        self.lock = threading.Lock()
        self._cut = False  # the file ends in a line cut by a kill: the next record starts a new line
        if path is not None and path.is_file():
            text = path.read_text()
            self._cut = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                try:
                    record = json.loads(line)
                    if "key" in record:
                        self._keep(record)
                    else:
                        self.legacy[record["k"]] = record["v"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut by a kill, or not a record
        self.earlier = len(self.rows)

    def _keep(self, record: dict) -> None:
        self.rows.append(record)
        if record["status"] == OK:
            self.ok[record["key"]] = record

    def key(self, call: Call) -> str:
        return call_key(self.identity, call)

    def recorded(self, key: str) -> dict | None:
        """The ``ok`` record of ``key`` (counted as a hit), or None."""
        if (hit := self.ok.get(key)) is not None:
            with self.lock:
                self.hits += 1
        return hit

    def answer(self, call: Call, legacy: str | None = None, usable: Callable = bool) -> tuple[str, object]:
        """``call``'s key and its recorded value, or ``MISSING``; a value found only under its
        ``legacy`` key (the older cache), when ``usable``, is recorded anew and returned."""
        key = self.key(call)
        if (hit := self.recorded(key)) is not None:
            return key, hit["value"]
        if legacy is not None and (old := self.legacy.get(legacy)) is not None and usable(old):
            return key, self.record(key, call, old, origin="cache")["value"]
        return key, MISSING

    def spend(self, reserved: int, response, counted: Callable[[], tuple[int, int]]) -> None:
        """Settle a reservation of the budget with the reply's usage, else ``counted()``."""
        if self.budget is None:
            return
        usage = getattr(response, "usage", None)
        used = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        if used[0] is None:
            used = counted() if response is not None else (0, 0)
        self.budget.settle(reserved, int(used[0]) + int(used[1] or 0))

    def record(self, key: str, call: Call, value, status: str = OK, reason: str | None = None,
               response=None, origin: str = "endpoint", attempts: int | None = None) -> dict:
        """Append one call's row (``response``: the endpoint's reply object, for the model,
        fingerprint and token usage it reports; ``attempts``: the requests it took, retries
        included, None where nothing was sent) and flush it to the file."""
        usage = getattr(response, "usage", None)
        p_tok, c_tok = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        s = call.settings
        row = {"key": key, "identity": self.identity, "kind": call.kind, "prompt": call.prompt,
               "max_tokens": s.get("max_tokens"), "temperature": s.get("temperature"), "seed": s.get("seed"),
               "logprobs": s.get("logprobs"), "top_logprobs": s.get("top_logprobs"), "echo": s.get("echo"),
               "value": value, "status": status, "reason": reason,
               "model": getattr(response, "model", None),
               "system_fingerprint": getattr(response, "system_fingerprint", None),
               "prompt_tokens": p_tok, "completion_tokens": c_tok, "attempts": attempts,
               "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "origin": origin}
        line = json.dumps(row) + "\n"
        with self.lock:
            self._keep(row)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as f:
                    f.write("\n" + line if self._cut else line)
                    self._cut = False
                    f.flush()
        return row

    def table(self) -> pd.DataFrame:
        """Every recorded call, in the order recorded; ``value`` as its JSON text."""
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame["attempts"] = frame["attempts"].astype("Int64")  # None: migrated, or recorded before the column
        frame["value"] = [json.dumps(v) for v in frame["value"]]
        for col in ("logprobs", "echo"):  # JSON booleans or ints by kind: one type for Parquet
            frame[col] = frame[col].map(lambda v: None if v is None else json.dumps(v))
        return frame

    def versions(self) -> list[dict]:
        """The distinct (model, system_fingerprint) the endpoint reported on its answered
        calls, in the order first seen, each with its first time and its number of calls."""
        seen: dict[tuple, dict] = {}
        for row in self.rows:
            if row["origin"] != "endpoint" or row["status"] != OK:
                continue
            version = (row["model"], row["system_fingerprint"])
            if version not in seen:
                seen[version] = {"model": row["model"], "system_fingerprint": row["system_fingerprint"],
                                 "first_seen": row["time"], "calls": 0, "this_run": False}
            seen[version]["calls"] += 1
        for row in self.rows[self.earlier:]:
            if row["origin"] == "endpoint" and row["status"] == OK:
                seen[(row["model"], row["system_fingerprint"])]["this_run"] = True
        return list(seen.values())

    def counts(self) -> dict:
        """Calls of this run (sent, failed, retried, answered from records) and records in all;
        ``retries``: the requests sent again after a 429, a timeout, a 5xx or a malformed body."""
        now = self.rows[self.earlier:]
        tries = [r.get("attempts") or 1 for r in now if r["origin"] == "endpoint"]
        return {"sent": len(tries), "failed": sum(r["status"] == FAILED for r in now),
                "retried": sum(t > 1 for t in tries), "retries": sum(t - 1 for t in tries),
                "migrated": sum(r["origin"] == "cache" for r in now), "answered_from_records": self.hits,
                "recorded": len(self.rows), "recorded_ok": len(self.ok)}
