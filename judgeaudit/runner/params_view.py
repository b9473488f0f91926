"""The params a stage is handed: only the keys its declaration names. Reading any other is
an error naming the stage and the key, so a stage cannot read a param that dvc.yaml does not
list for it (and so that DVC would not rerun it for)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from judgeaudit.config import Params


class UndeclaredParam(RuntimeError):
    """A stage read a param its declaration does not name."""


class _Hidden:
    """Stands for a params key the stage did not declare: any use of it names the key."""

    def __init__(self, stage: str, key: str, value: Any = None, fields: frozenset[str] = frozenset()) -> None:
        object.__setattr__(self, "_where", (stage, key, value, fields))

    def _refuse(self, what: str = "") -> NoReturn:
        stage, key, _, _ = object.__getattribute__(self, "_where")
        raise UndeclaredParam(f"stage {stage} reads params.{key}{what}, which its STAGE.params does not declare "
                              f"(judgeaudit/stages/{stage}.py); declare it, then `judgeaudit deps --write`")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        stage, key, value, fields = object.__getattribute__(self, "_where")
        if name in fields:
            return getattr(value, name)
        self._refuse(f".{name}")

    def __reduce__(self) -> tuple:
        return (_Hidden, object.__getattribute__(self, "_where"))

    def __repr__(self) -> str:
        stage, key, _, fields = object.__getattribute__(self, "_where")
        return f"<params.{key}: not declared by stage {stage}" + (f" beyond {sorted(fields)}>" if fields else ">")

    def __bool__(self) -> bool:
        self._refuse()

    def __eq__(self, other: object) -> bool:
        self._refuse()

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self):
        self._refuse()

    def __len__(self) -> int:
        self._refuse()

    def __int__(self) -> int:
        self._refuse()

    __index__ = __float__ = __int__

    def __add__(self, other: object) -> Any:
        self._refuse()

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __add__


# handed to every stage, and listed by none in dvc.yaml: how work is spread over processes,
# which changes no result (judgeaudit/stagekit/pool.py), so DVC rightly reruns nothing for it
UNTRACKED = ("scale",)


def view(params: Params, stage: str, declared: Iterable[str]) -> Params:
    """``params`` with every key outside ``declared`` (and ``UNTRACKED``) hidden: a whole
    section (``"judge"``) is handed as it is; of a section named only by fields
    (``"audit.confidence"``), just those fields can be read."""
    declared = (*declared, *UNTRACKED)
    whole = {k for k in declared if "." not in k}
    fields: dict[str, set[str]] = {}
    for key in declared:
        if "." in key:
            section, field = key.split(".", 1)
            fields.setdefault(section, set()).add(field.split(".")[0])
    unknown = sorted({k.split(".")[0] for k in declared} - set(Params.model_fields))
    if unknown:
        raise ValueError(f"stage {stage} declares params {unknown}, which params.yaml does not have")
    hidden = {}
    for name in Params.model_fields:
        if name in whole:
            continue
        value = getattr(params, name)
        if name in fields and value is not None:
            hidden[name] = _Hidden(stage, name, value, frozenset(fields[name]))
        elif name in fields:
            continue  # an absent section: None, as the stage would see it
        else:
            hidden[name] = _Hidden(stage, name)
    return params.model_copy(update=hidden)
