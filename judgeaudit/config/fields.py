"""What every section of the settings shares: strict models (an unknown key is an error),
templates checked for exactly their placeholders, and a training run's arguments."""

from __future__ import annotations

import string

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """A section of the settings: a key it does not know is an error, not ignored; a value
    of the wrong YAML type is an error, not converted (pydantic's lax mode reads ``"1234"``
    as 1234 and ``true`` as 1); NaN and infinity are not numbers a setting can hold."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields of a str.format template (``{{`` escapes excluded)."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def check_template(template: str, expected: set[str], what: str) -> str:
    """``template`` when its placeholders are exactly ``expected``; else a ValueError naming
    the missing and the unknown ones (a misspelt field would otherwise fail at run time,
    or silently show the judge a literal "{answr_b}")."""
    try:
        got = placeholders(template)
    except ValueError as exc:  # an unmatched brace
        raise ValueError(f"{what}: not a valid template ({exc}); write a literal brace as {{{{ or }}}}")
    missing, unknown = sorted(expected - got), sorted(got - expected)
    if missing or unknown:
        parts = ([f"missing {', '.join('{' + m + '}' for m in missing)}"] if missing else []) + (
            [f"unknown {', '.join('{' + u + '}' for u in unknown)}"] if unknown else [])
        raise ValueError(f"{what} must have exactly the placeholders "
                         f"{', '.join('{' + e + '}' for e in sorted(expected))}: {'; '.join(parts)}")
    return template


class TrainArgs(Strict):
    epochs: float = Field(gt=0)
    lr: float = Field(gt=0)
    batch_size: int = Field(ge=1)
    # recompute activations in the backward pass: saves memory on a large model, costs
    # ~30-40% of the step time on the embedded ones (whose weights it leaves bitwise equal)
    activation_checkpointing: bool = False
