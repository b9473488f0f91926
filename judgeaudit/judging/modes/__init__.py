"""Verdict modes, registered by name, each with its own settings: ``verdict_mode(name,
settings)`` gives the mode, and calling it gives a judge's verdicts in both orders. The
built-in modes, one module each, are imported here (by name, so that a stage's code deps
list them) and register themselves; a new mode is its module and its name below."""

from judgeaudit.judging.modes.base import (
    MarginMode,
    ScoringMode,
    TokenMode,
    VerdictMode,
    orders_from_margins,
)
from judgeaudit.judging.modes.registry import mode_type, register_mode, registered_modes, verdict_mode

from judgeaudit.judging.modes import generative, likelihood, prompted  # noqa: E402, F401  (registers them)

__all__ = ["MarginMode", "ScoringMode", "TokenMode", "VerdictMode", "mode_type", "orders_from_margins",
           "register_mode", "registered_modes", "verdict_mode"]
