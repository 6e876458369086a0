"""Numbers in problem files: TOML numbers or exact rational strings "p/q".

Every float is a dyadic rational, so `Fraction(float)` is exact: a value given as a
number is kept exactly as the float the user wrote, a "p/q" string exactly as written.
An integer, a numerator or a denominator has at most MAX_DIGITS decimal digits (below
Python's 4300-digit limit on int <-> str conversion, so reading one never depends on it).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

MAX_DIGITS = 4000  # per integer, numerator or denominator; digits of a decimal number
_RATIONAL = re.compile(r"^\s*[+-]?(\d+)(?:\s*/\s*(\d+))?\s*$")
_DECIMAL = re.compile(r"^\s*[+-]?(?:(\d+)\.(\d*)|\.(\d+))\s*$")
_TOO_LONG = (f"has too many digits: at most {MAX_DIGITS:,} in the numerator and in the "
             "denominator of an exact rational, and in all of a decimal number")
_LIMIT = 10**MAX_DIGITS  # the smallest integer with more than MAX_DIGITS digits
# Rows of probabilities (kernels, mechanisms) given with TOML floats must sum to 1 within
# this; given exactly (no float), they must sum to exactly 1.
STOCHASTIC_TOL = 1e-9


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


# Python refuses int <-> decimal string conversions beyond 4300 digits (sys.int_info,
# CVE-2020-10735). Exact rationals of certificates are longer; they are converted here,
# at any length, without touching that process-wide limit.
_SHORT_DIGITS = 4000
_INTEGER = re.compile(r"-?[0-9]+")


def integer_text(n: int) -> str:
    """The decimal digits of an integer of any length (`str(n)` stops at 4300 digits)."""
    if n.bit_length() < 3 * _SHORT_DIGITS:  # fewer than 3612 digits: str is allowed
        return str(n)
    from flint import fmpz

    return fmpz(n).str()


def parse_integer(text: str) -> int:
    """An integer written `-?[0-9]+`, of any length (`int(text)` stops at 4300 digits);
    ValueError otherwise."""
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer")
    if len(text) <= _SHORT_DIGITS:
        return int(text)
    from flint import fmpz

    return int(fmpz(text))


def rational_text(value: Fraction | int) -> str:
    """An exact rational as "p/q", or "p" for an integer, at any length: the certificate
    format's numbers."""
    value = Fraction(value)
    if value.denominator == 1:
        return integer_text(value.numerator)
    return f"{integer_text(value.numerator)}/{integer_text(value.denominator)}"


def parse_rational(text: str) -> Fraction:
    """"p/q" or "p" (p an integer, q a positive integer) as an exact Fraction, at any
    length; ValueError otherwise (a malformed string, a zero denominator)."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a string")
    num, slash, den = text.partition("/")
    numerator = parse_integer(num)
    denominator = parse_integer(den) if slash else 1
    if denominator <= 0 or den.startswith("-"):
        raise ValueError(f"{text!r}: the denominator must be a positive integer")
    return Fraction(numerator, denominator)
