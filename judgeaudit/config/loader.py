"""``load_params``: a params file (and the files it extends) read, validated into ``Params``,
and every error named by its file, its line and the field."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from judgeaudit.config.params import Params
from judgeaudit.params_file import ConfigError, read_params_file


def _where(err: dict) -> str:
    return ".".join(str(p) for p in err["loc"]) or "(top level)"


def load_params(path: str | Path = "params.yaml") -> Params:
    """Read and validate ``path``, an overlay's chain merged (judgeaudit/params_file.py); raise
    ConfigError naming, for each bad field, the file and line that set it."""
    params_file = read_params_file(path)
    try:
        return Params.model_validate(params_file.data)
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            # a cross-check of the whole file names its field first: "judge.modes.x names ..."
            named = re.match(r"Value error, ([\w-]+(?:\.[\w-]+)+) ", e["msg"]) if not e["loc"] else None
            file, line = params_file.place(tuple(named.group(1).split(".")) if named else e["loc"])
            got = f" (got {e['input']!r})" if e["type"] in ("literal_error", "enum") else ""
            lines.append(f"{file}{f':{line}' if line else ''}: {_where(e)}: {e['msg']}{got}")
        raise ConfigError("invalid params:\n  " + "\n  ".join(lines)) from None
