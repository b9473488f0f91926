"""Verdict modes by name. A mode registers itself with ``@register_mode(name)`` where it
is defined; the package's ``__init__`` imports the built-in ones (one module each), so
they are registered whenever this module is loaded, and a mode of one's own is registered
by importing its module before the mode is named."""

from __future__ import annotations

from collections.abc import Callable

from judgeaudit.judging.modes.base import VerdictMode

_MODES: dict[str, type[VerdictMode]] = {}


def register_mode(name: str) -> Callable[[type[VerdictMode]], type[VerdictMode]]:
    """Class decorator: register a ``VerdictMode`` subclass under ``name``."""

    def register(cls: type[VerdictMode]) -> type[VerdictMode]:
        known = _MODES.get(name)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"verdict mode {name!r} is already registered by "
                             f"{known.__module__}.{known.__qualname__}")
        cls.name = name
        _MODES[name] = cls
        return cls

    return register


def registered_modes() -> list[str]:
    """The names of every registered verdict mode, sorted."""
    return sorted(_MODES)


def mode_type(name: str) -> type[VerdictMode]:
    """The mode class registered under ``name``; a ValueError listing the registered ones if none is."""
    if name not in _MODES:
        raise ValueError(f"unknown verdict mode {name!r}; registered: {', '.join(sorted(_MODES))}")
    return _MODES[name]


def verdict_mode(name: str, settings) -> VerdictMode:
    """The mode ``name`` with its own settings read off ``settings`` (the params ``judge`` section)."""
    return mode_type(name).from_settings(settings)
