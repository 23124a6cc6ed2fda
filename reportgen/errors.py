"""The one user-facing error type.

Every stage raises `UserError` for bad input (a malformed spec, a missing file, a refused
operation). The CLI catches it once, prints its one-line message and exits with code 2.
Messages name the file, key or flag at fault and what would fix it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class UserError(Exception):
    """Bad input or a refused operation: a one-line message for the user, exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:  # one line, always
        return " ".join(self.message.split())


def first_problem(exc: ValidationError, whole: str = "document") -> str:
    """A validation error's first problem as "where: what" ("runs.0.repeat: Input should be a valid
    integer"), the form every reader of a typed file puts in its one line; `whole` names the place
    when the problem is the document itself."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or whole
    return f"{where}: {err['msg']}"
