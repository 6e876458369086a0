"""Numbers in problem files: TOML numbers or exact rational strings "p/q".

Every float is a dyadic rational, so `Fraction(float)` is exact: a value given as a
number is kept exactly as the float the user wrote, a "p/q" string exactly as written.
An integer, a numerator or a denominator has at most MAX_DIGITS decimal digits (below
Python's 4300-digit limit on int <-> str conversion, so reading one never depends on it).
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from fractions import Fraction

MAX_DIGITS = 4000  # per integer, numerator or denominator; digits of a decimal number
_RATIONAL = re.compile(r"^\s*[+-]?(\d+)(?:\s*/\s*(\d+))?\s*$")
_DECIMAL = re.compile(r"^\s*[+-]?(?:(\d+)\.(\d*)|\.(\d+))\s*$")
_TOO_LONG = (f"has too many digits: at most {MAX_DIGITS:,} in the numerator and in the "
             "denominator of an exact rational, and in all of a decimal number")
_LIMIT = 10**MAX_DIGITS  # the smallest integer with more than MAX_DIGITS digits


class NumberError(ValueError):
    """Not a number of the allowed kind; the message says what is allowed."""


def parse_exact(value: object, *, strings: bool = True) -> Fraction:
    """A TOML value -> an exact Fraction. Booleans, NaN and infinities are refused."""
    allowed = "a number" + (' or an exact rational string such as "3/2"' if strings else "")
    if isinstance(value, bool):
        raise NumberError(f"must be {allowed}, not a boolean")
    if isinstance(value, int):
        if abs(value) >= _LIMIT:
            raise NumberError(f"must be an integer with at most {MAX_DIGITS:,} digits")
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NumberError(f"must be a finite number, not {value}")
        return Fraction(value)
    if isinstance(value, str) and strings:
        match = _RATIONAL.match(value) or _DECIMAL.match(value)
        parts = [part for part in match.groups() if part] if match else []
        if match and (max(map(len, parts), default=0) if match.re is _RATIONAL
                      else sum(map(len, parts))) > MAX_DIGITS:
            raise NumberError(_TOO_LONG)
        if match and match.re is _RATIONAL:
            den = int(match.group(2)) if match.group(2) is not None else 1
            if den == 0:
                raise NumberError("the denominator of a rational must not be 0")
            return Fraction(int(value.split("/")[0]), den)
        if match:  # whole and fraction digits apart: each within Python's int-str limit
            whole, frac = match.group(1) or "0", match.group(2) or match.group(3) or ""
            out = int(whole) + Fraction(int(frac or "0"), 10 ** len(frac))
            return -out if value.strip().startswith("-") else out
        raise NumberError('a string must be an exact rational such as "3/2", "7" or "0.25" '
                          f"(at most {MAX_DIGITS:,} digits in the numerator and in the "
                          "denominator)")
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
