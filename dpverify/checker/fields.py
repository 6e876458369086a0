"""Reading a certificate's JSON fields: typed fields, exact rationals of any length, vectors
and matrices, and numbers shown in messages without ever printing a long integer.

A field that is missing, of the wrong type or of the wrong length is not a failed proof
but bad input: CertificateFormatError (exit 2). Rationals are read by spec.numbers, which
reads numerators of any length (Python's own int(str) stops at 4300 digits).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpverify.spec.numbers import parse_rational, rational_text

# Messages show a rational exactly up to this many bits (about 40 digits), else as a float.
SHOWN_BITS = 130

Json = dict[str, Any]  # a JSON object as json.loads returns it
Matrix = list[list[Fraction]]


class CertificateFormatError(ValueError):
    """The certificate is not in the format at all (not a failed proof: bad input)."""


def get_field(obj: object, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """obj[key], of type `kind` (never a bool), or CertificateFormatError."""
    if not isinstance(obj, dict) or key not in obj:
        raise CertificateFormatError(f"missing `{where}{key}`")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CertificateFormatError(f"`{where}{key}` has the wrong type")
    return value


def rational(value: object, where: str) -> Fraction:
    """An exact rational: a string "p/q" or "p" of any length (an int is accepted too)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str):
        raise CertificateFormatError(f"`{where}` is a {type(value).__name__}, not an exact "
                                     "rational 'p/q'")
    try:
        return parse_rational(value)
    except ValueError:
        shown = value if len(value) <= 40 else value[:20] + "..."
        raise CertificateFormatError(f"`{where}` = {shown!r} is not an exact rational 'p/q' "
                                     "(q > 0)") from None


def vector(obj: object, key: str, length: int, where: str) -> list[Fraction]:
    """obj[key]: a list of `length` rationals."""
    items = get_field(obj, key, list, where)
    if len(items) != length:
        raise CertificateFormatError(f"`{where}{key}` has {len(items)} entries, not {length}")
    return [rational(v, f"{where}{key}[{i}]") for i, v in enumerate(items)]


def matrix(items: object, rows: int, cols: int, where: str) -> Matrix:
    """`rows` lists of `cols` rationals (a string repeated is read once: a rule's 0s)."""
    if not isinstance(items, list) or len(items) != rows:
        raise CertificateFormatError(f"`{where}` needs {rows} rows")
    out, seen = [], dict[object, Fraction]()
    for r, row in enumerate(items):
        if not isinstance(row, list) or len(row) != cols:
            raise CertificateFormatError(f"`{where}[{r}]` needs {cols} entries")
        out.append([seen[v] if type(v) is str and v in seen else
                    seen.setdefault(v, rational(v, f"{where}[{r}][{c}]"))
                    for c, v in enumerate(row)])
    return out


def show(x: Fraction | int) -> str:
    """Exact when short, else `~` and a float (the exact value is in the certificate); never
    a decimal conversion of a long integer."""
    x = Fraction(x)
    if x.numerator.bit_length() + x.denominator.bit_length() <= SHOWN_BITS:
        return rational_text(x)
    try:
        return f"~{float(x):.17g}"
    except OverflowError:  # beyond 1e308: the decimal exponent from logarithms
        exponent = math.log10(abs(x.numerator)) - math.log10(x.denominator)
        whole = math.floor(exponent)
        return f"~{'-' if x < 0 else ''}{10 ** (exponent - whole):.6f}e+{whole}"
