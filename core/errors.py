"""Errors that the CLI turns into a one-line message and an exit code."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError


class UserError(Exception):
    """Bad input from the user (a file, a flag, a value). Exit code 2; nothing was touched."""

    exit_code = 2


class EnvironmentProblem(Exception):
    """The machine cannot do what was asked (missing tool, no root, a port in use). Exit code 3."""

    exit_code = 3


class RunFailed(Exception):
    """A run started but did not complete as a valid measurement. Exit code 4."""

    exit_code = 4


M = TypeVar("M", bound=BaseModel)


def validated(
    model: type[M],
    data: object,
    source: str,
    expected: str,
    *,
    show_input: bool = True,
    allowed: Iterable[str] | None = None,
) -> M:
    """`data` (a file's YAML, say) as `model`, or a UserError naming `source` and each bad field.

    `expected` says what the top level must be ("a mapping of OMB workload fields"); `show_input` and
    `allowed` as in `validation_message`."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: expected {expected}, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise UserError(validation_message(source, e, show_input=show_input, allowed=allowed)) from None


def validation_message(source: str, e: Any, *, show_input: bool = True, allowed: Iterable[str] | None = None) -> str:
    """One line per field of a pydantic ValidationError: `source: field.path: what is wrong`.

    `show_input=False` where a value may be a secret (an inventory): the line names the field only.
    `allowed`: the top-level field names, listed after an unknown field.
    """
    lines = []
    for err in e.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
            if allowed is not None and len(err["loc"]) == 1:
                msg += f" (allowed: {', '.join(allowed)})"
        elif show_input and "input" in err and err["type"] not in ("missing", "value_error"):
            msg += f" (got {err['input']!r})"
        lines.append(f"{source}: {field}: {msg}")
    return "\n".join(lines)
