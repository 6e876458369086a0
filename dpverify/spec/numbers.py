"""Numbers in problem files: TOML numbers or exact rational strings "p/q".

Every float is a dyadic rational, so `Fraction(float)` is exact: a value given as a
number is kept exactly as the float the user wrote, a "p/q" string exactly as written.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from fractions import Fraction

_RATIONAL = re.compile(r"^\s*([+-]?\d{1,60})(?:\s*/\s*(\d{1,60}))?\s*$")
_DECIMAL = re.compile(r"^\s*[+-]?(\d{1,60}\.\d{0,60}|\.\d{1,60})\s*$")


class NumberError(ValueError):
    """Not a number of the allowed kind; the message says what is allowed."""


def parse_exact(value: object, *, strings: bool = True) -> Fraction:
    """A TOML value -> an exact Fraction. Booleans, NaN and infinities are refused."""
    allowed = "a number" + (' or an exact rational string such as "3/2"' if strings else "")
    if isinstance(value, bool):
        raise NumberError(f"must be {allowed}, not a boolean")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NumberError(f"must be a finite number, not {value}")
        return Fraction(value)
    if isinstance(value, str) and strings:
        match = _RATIONAL.match(value)
        if match:
            den = int(match.group(2)) if match.group(2) is not None else 1
            if den == 0:
                raise NumberError("the denominator of a rational must not be 0")
            return Fraction(int(match.group(1)), den)
        if _DECIMAL.match(value):
            return Fraction(value.strip())
        raise NumberError('a string must be an exact rational such as "3/2" or "7"')
    raise NumberError(f"must be {allowed}")


@contextlib.contextmanager
def unlimited_int_digits():
    """Lift Python's 4300-digit limit on int <-> str conversion while exact
    rationals are written or read (certificates of large problems hold longer numbers; the
    limit guards servers, not a local proof checker); restored afterwards. The one place
    that lifts it."""
    get = getattr(sys, "get_int_max_str_digits", None)
    if get is None:
        yield
        return
    old = get()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def lift_int_digit_limit() -> None:
    """The same, for the rest of the process: commands that print exact rationals (certify,
    check-cert) call it once."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
