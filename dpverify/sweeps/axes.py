"""What a sweep varies: a privacy level (`epsilon`, `lambda` or `alpha`, or a multi-party
problem's `delta`, the same for every party) and/or the number of `parties`, each over a
range `start:stop:count` or a list of values.

Values are computed exactly: `0.1:4:40` gives 0.1, 0.2, ..., 4.0 (each the float nearest
to the exact decimal, never `0.30000000000000004`). A range or list written with an exact
rational (`1/20:19/20:19`) gives exact "p/q" values, which problem files keep exact.
"""

from __future__ import annotations

import enum
import numbers
from collections.abc import Iterable
from fractions import Fraction

from dpverify.errors import OptionError
from dpverify.records import record

MAX_POINTS = 10_000  # per axis: a typo such as 0.1:4:40000 is refused, not run


class Variable(enum.StrEnum):
    """A swept quantity, named as in problem files."""

    EPSILON = "epsilon"
    LAMBDA = "lambda"
    ALPHA = "alpha"
    PARTIES = "parties"
    DELTA = "delta"  # approximate privacy (docs/theory.md, "Approximate privacy")


LEVELS = (Variable.EPSILON, Variable.LAMBDA, Variable.ALPHA, Variable.DELTA)

# A value as a problem file takes it: a float, an int (parties), or an exact "p/q" string.
Value = float | int | str


@record
class Axis:
    """One swept variable and its values, in order."""

    variable: Variable
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise OptionError(f"--{self.variable}: no values")


def _number(text: str, option: str) -> Fraction:
    try:
        return Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise OptionError(f"{option} {text!r}: not a number (write 0.5, 2 or an exact "
                          "rational such as 1/2)") from None


def _level(value: Fraction, exact: bool) -> Value:
    if exact:
        return str(value)  # "p/q", or "p" for an integer
    return float(value)


def parse_levels(spec: str | Iterable[object], variable: Variable) -> Axis:
    """A privacy axis from `start:stop:count` (count points from start to stop, both
    included), a comma-separated list, or (from Python) a sequence of numbers."""
    option = f"--{variable}"
    if not isinstance(spec, str):
        return Axis(variable, tuple(_python_level(v, option) for v in spec))
    text = spec.strip()
    exact = "/" in text
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise OptionError(f"{option} {spec!r}: write start:stop:count (for example "
                              "0.1:4:40) or a comma-separated list")
        start, stop = _number(parts[0], option), _number(parts[1], option)
        count = _count(parts[2], spec, option)
        if count == 1:
            return Axis(variable, (_level(start, exact),))
        step = (stop - start) / (count - 1)
        return Axis(variable, tuple(_level(start + i * step, exact) for i in range(count)))
    items = [t for t in text.split(",") if t.strip()]
    if not items:
        raise OptionError(f"{option} {spec!r}: no values")
    _check_size(len(items), spec, option)
    return Axis(variable, tuple(_level(_number(t, option), "/" in t) for t in items))


def _count(text: str, spec: str, option: str) -> int:
    text = text.strip()
    if not text.isdigit() or int(text) < 1:
        raise OptionError(f"{option} {spec!r}: the count (after the second ':') must be an "
                          "integer >= 1")
    count = int(text)
    _check_size(count, spec, option)
    return count


def _check_size(count: int, spec: object, option: str) -> None:
    if count > MAX_POINTS:
        raise OptionError(f"{option} {spec!r}: {count} values; at most {MAX_POINTS:,} per axis")


def _python_level(value: object, option: str) -> Value:
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, str):
        return _level(_number(value, option), "/" in value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise OptionError(f"{option}: {value!r} is not a number")


def parse_parties(spec: str | int | Iterable[object]) -> Axis:
    """A parties axis from `start:stop` (every k from start to stop), a comma-separated
    list, one integer, or (from Python) a sequence of integers."""
    option = "--parties"
    if isinstance(spec, int):
        return Axis(Variable.PARTIES, (_integer(spec, option),))
    if not isinstance(spec, str):
        return Axis(Variable.PARTIES, tuple(_integer(v, option) for v in spec))
    text = spec.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 2:
            raise OptionError(f"{option} {spec!r}: write start:stop (every k from start to "
                              "stop, for example 2:12) or a list such as 2,4,8")
        start, stop = (_integer(p, option) for p in parts)
        if stop < start:
            raise OptionError(f"{option} {spec!r}: stop must be >= start")
        _check_size(stop - start + 1, spec, option)
        return Axis(Variable.PARTIES, tuple(range(start, stop + 1)))
    items = [t for t in text.split(",") if t.strip()]
    if not items:
        raise OptionError(f"{option} {spec!r}: no values")
    _check_size(len(items), spec, option)
    return Axis(Variable.PARTIES, tuple(_integer(t, option) for t in items))


def _integer(value: object, option: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 1:
        return int(value)
    raise OptionError(f"{option}: {value!r} is not an integer >= 1")
