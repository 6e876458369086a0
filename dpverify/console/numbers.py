"""How numbers look on the command line: exact rationals as "p/q", floats with fixed digits.

The one place the CLI and the console format numbers, so a rational reads the same in a
table, a line of text and a JSON object (where spec files accept it back).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction
from typing import Any

LONG_RATIONAL = 40  # characters: longer rationals are shown as floats in running text


def rational(x: Fraction | int) -> str:
    """An exact rational as "p/q", or "p" when it is an integer, at any length."""
    x = Fraction(x)
    return _digits(x.numerator) if x.denominator == 1 else \
        f"{_digits(x.numerator)}/{_digits(x.denominator)}"


def _digits(n: int) -> str:
    """str(n), also beyond Python's 4300-digit limit on int -> str (Decimal has none)."""
    return str(n) if n.bit_length() < 12000 else str(decimal.Decimal(n))


def short_rational(x: Fraction, limit: int = LONG_RATIONAL) -> str:
    """`rational(x)`, or `~` and its float value when that would exceed `limit` characters
    (for running text; JSON and certificates always carry the exact value)."""
    text = rational(x)
    return text if len(text) <= limit else f"~{float(x):.17g}"


def show_number(v: Any, digits: int = 6) -> str:
    """An exact rational as p/q (or an integer); a float with `digits` significant digits."""
    if isinstance(v, Fraction):
        return rational(v)
    v = float(v)
    if v == 0:
        return "0"
    return f"{v:.{digits}g}"


def json_number(v: Any) -> Any:
    """Exact rationals as "p/q" strings (spec files accept them back), floats as floats
    (None when not finite)."""
    if isinstance(v, Fraction):
        return rational(v)
    v = float(v)
    return v if math.isfinite(v) else None


def json_output(v: Any) -> Any:
    """A decision output: an integer as an int, another rational as "p/q", a float as is."""
    if isinstance(v, Fraction):
        return v.numerator if v.denominator == 1 else rational(v)
    return v


def fmt(value: float | None, digits: int = 12) -> str:
    """A float with `digits` significant digits; "-" for None and non-finite values."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}g}"


def fmt_gap(value: float | None, digits: int = 2) -> str:
    """A gap in scientific notation with `digits` decimals; "-" for None."""
    if value is None:
        return "-"
    return f"{value:.{digits}e}"


def proof_cell(proof: Any) -> str:
    """A result's `proof` (verifiers/result.py, Proof) in a table cell: `proved`,
    `bracket +-width`, `unproved`, or `-` when no certificate was built."""
    if proof is None:
        return "-"
    if proof.status == "proved-optimal":
        return "proved"
    if proof.status == "bracket":
        return f"bracket +-{proof.width or 0:.1e}"
    return "unproved"
