"""The exception family of dpverify.

Every error a user can cause or meet is one of these; the CLI turns each into one
line on stderr and the exit status of spec.md (2 bad input, 3 could not decide).
"""

from __future__ import annotations


class DpverifyError(Exception):
    """Base class. `exit_code` is the process exit status spec.md assigns."""

    exit_code = 3


class SpecError(DpverifyError):
    """A problem file (or a command-line value) is invalid: exit 2.

    The message names the file, the key, the bad value and what would be valid.
    """

    exit_code = 2

    def __init__(self, file: str, key: str, value: object, allowed: str) -> None:
        self.file = file
        self.key = key
        self.value = value
        self.allowed = allowed
        text = shown(value)
        if key and value is None:
            message = f"{file}: `{key}`: {allowed}"
        elif key:
            message = f"{file}: `{key}` = {text}: {allowed}"
        else:
            message = f"{file}: {allowed}" if value is None else f"{file}: {text}: {allowed}"
        super().__init__(message)


class InputError(DpverifyError):
    """Bad input that is not a problem file (a certificate, a store path): exit 2."""

    exit_code = 2


class OptionError(InputError, ValueError):
    """An option of the Python API (or a sweep's range) is unknown or has a bad value:
    exit 2. The message names the option and says what is allowed."""


class SolverError(DpverifyError):
    """A solver failed or returned a non-optimal status: the verdict is `error`, exit 3."""

    exit_code = 3


class SizeLimitError(DpverifyError):
    """The problem is larger than the configured limit: refused, exit 3."""

    exit_code = 3


class TimeLimitError(DpverifyError):
    """A run passed its time limit (`--timeout`) before it was decided: exit 3. The message
    names the limit and the option that raises it."""

    exit_code = 3


def shown(value: object, limit: int = 80) -> str:
    """A value as a message shows it: its repr, shortened past `limit` characters (a
    problem file's number of 4,000 digits stays one short line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
