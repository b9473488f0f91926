"""Model backends by name, each a ``LanguageModel`` class built as ``cls(spec, name=,
progress=)`` that reads its own fields of the ``ModelSpec``. A backend of one's own
registers its class with ``@register_backend(name)`` where it is defined; the built-in
ones are registered in ``models.backends`` by a loader each (as inspect_ai registers its
model providers), so that a backend's heavy dependencies (torch, openai, vllm) load only
when a spec names it. This module imports nothing of the package (the spec checks names
here; ``models.backends.load_model`` builds them)."""

from __future__ import annotations

from collections.abc import Callable

# name -> (where it was registered, the function that gives its class)
_LOADERS: dict[str, tuple[str, Callable[[], type]]] = {}


def _register(name: str, loader: Callable[[], type], where: str) -> None:
    known = _LOADERS.get(name)
    if known is not None and known[0] != where:
        raise ValueError(f"model backend {name!r} is already registered by {known[0]}")
    _LOADERS[name] = (where, loader)


def register_backend(name: str) -> Callable[[type], type]:
    """Class decorator: register a ``LanguageModel`` subclass as the backend ``name``."""

    def register(cls: type) -> type:
        _register(name, lambda: cls, f"{cls.__module__}.{cls.__qualname__}")
        return cls

    return register


def register_loader(name: str) -> Callable[[Callable[[], type]], Callable[[], type]]:
    """Function decorator: register as the backend ``name`` a function that imports the
    backend's module and returns its class (called on the backend's first use)."""

    def register(loader: Callable[[], type]) -> Callable[[], type]:
        _register(name, loader, f"{loader.__module__}.{loader.__qualname__}")
        return loader

    return register


def backend_names() -> list[str]:
    """Every registered backend, sorted."""
    return sorted(_LOADERS)


def check_backend(name: str) -> str:
    """``name`` if a backend of that name is registered, else a ValueError listing those that are."""
    if name not in _LOADERS:
        raise ValueError(f"unknown model backend {name!r}; known: {backend_names()}")
    return name


def backend(name: str) -> type:
    """The class of backend ``name`` (its module imported on first use)."""
    return _LOADERS[check_backend(name)][1]()

