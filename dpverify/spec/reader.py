"""Reading TOML data files: the file (`read_data`), its text (`parse_toml`, the one TOML
parser of every loader) and typed access to one table with error messages that name file,
key and value (`Table`).

Shared by the loaders of every file kind (and anything else that reads TOML data).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from fractions import Fraction
from os import PathLike
from typing import Any

from dpverify.errors import SpecError
from dpverify.spec.numbers import MAX_DIGITS, NumberError, parse_exact

_MISSING = object()


def type_name(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


class Table:
    """A TOML table at key path `path` of `file`; `done()` refuses unknown keys."""

    def __init__(self, data: object, file: str, path: str) -> None:
        if not isinstance(data, dict):
            raise SpecError(file, path, data, f"must be a table, not {type_name(data)}")
        self.data: dict[str, Any] = data
        self.file = file
        self.path = path
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, value: object, allowed: str) -> SpecError:
        return SpecError(self.file, self.key(name), value, allowed)

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, default: object = _MISSING) -> Any:
        self.used.add(name)
        if name in self.data:
            return self.data[name]
        if default is _MISSING:
            raise SpecError(self.file, self.key(name), None, "is required") from None
        return default

    def string(self, name: str, default: object = _MISSING, *,
               choices: Sequence[str] | None = None) -> str:
        value = self.get(name, default)
        if not isinstance(value, str):
            raise self.error(name, value, f"must be a string, not {type_name(value)}")
        if choices is not None and value not in choices:
            raise self.error(name, value, "allowed: " + ", ".join(repr(c) for c in choices))
        return value

    def integer(self, name: str, default: object = _MISSING, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        value = self.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, value, f"must be an integer, not {type_name(value)}")
        if minimum is not None and value < minimum:
            raise self.error(name, value, f"must be an integer >= {minimum}")
        if maximum is not None and value > maximum:
            raise self.error(name, value, f"must be an integer <= {maximum}")
        return value

    def table(self, name: str) -> Table:
        return Table(self.get(name), self.file, self.key(name))

    def done(self, allowed: tuple[str, ...]) -> None:
        """Refuse keys that were never read (a typo must not pass unnoticed)."""
        for name in self.data:
            if name not in allowed:
                raise SpecError(self.file, self.key(name), self.data[name],
                                "unknown key; allowed here: " + ", ".join(allowed))


def exact_number(table: Table, name: str, value: object, *, key: str | None = None,
                 strings: bool = True) -> Fraction:
    """An exact number (TOML number or "p/q" string) or a SpecError naming the key."""
    try:
        return parse_exact(value, strings=strings)
    except NumberError as exc:
        raise SpecError(table.file, key or table.key(name), value, str(exc)) from None


MAX_FILE_BYTES = 4 * 1024 * 1024


def expression_text(table: Table, text: object, key: str, names: Iterable[str]) -> str:
    """The text of a `{ expr = "..." }` value at `key`, checked by the safe evaluator."""
    from dpverify.spec.expr import ExpressionError, compile_expression

    if not isinstance(text, str):
        raise SpecError(table.file, f"{key}.expr", text,
                        f"must be a string, not {type_name(text)}")
    try:
        compile_expression(text, names)
    except ExpressionError as exc:
        raise SpecError(table.file, f"{key}.expr", text, str(exc)) from None
    return text


def read_text(path: str | PathLike[str]) -> str:
    """A TOML data file's text: bounded in size, UTF-8 (a byte-order mark is harmless)."""
    return read_data(path)[1]


def read_data(path: str | PathLike[str]) -> tuple[bytes, str]:
    """A TOML data file's bytes (for hashing) and text, or a SpecError naming the file."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError(source, "", None, f"cannot read the file: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(source, "", None,
                        f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(source, "", None,
                        f"the file is not UTF-8 text (byte {exc.start}: "
                        f"{raw[exc.start:exc.start + 1]!r}); save it as UTF-8") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The document of a TOML file's `text` (a leading byte-order mark is harmless), or a
    one-line SpecError naming `source` (exit 2): a syntax error, arrays or tables nested
    too deeply for the parser, or an integer beyond Python's int-string limit (4300
    digits). Every loader parses through here."""
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "", None, f"TOML syntax error: {exc}") from None
    except ValueError as exc:  # an integer beyond Python's int-str limit (4300 digits)
        raise SpecError(source, "", None,
                        "an integer in the file has too many digits (at most "
                        f"{MAX_DIGITS:,}): {str(exc).split(':')[0]}") from None
    except RecursionError:
        raise SpecError(source, "", None,
                        "TOML syntax error: arrays or tables nested too deeply") from None
