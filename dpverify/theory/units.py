"""Gains (or losses) normalised to [0, 1]: w = lo + span w', as a reduction with its
inverse (docs/theory.md, "Gains normalised to [0, 1]").

Every verifier decides on w', so no verdict depends on the scale of the gains: the
tolerance is relative to their range (`Units.tolerance`). The affine map changes every
accuracy the same way (accuracies are linear in the gains, and rules and priors are
distributions), so optimal rules and priors are the same in both units, and the values
map back exactly: value = lo + span value', and a dual mu of the corner inequalities
(sum(mu) = the bound) maps as mu = span mu' + lo pi for the prior pi it belongs to.

lo and span are exact (Fractions): the range of gains such as 1e308 and -1e308 does not fit
a float, but every gain does, and so does every value between them. A constant table has
span 1 (w' = 0). Count problems take lo and span over the rows that matter (the side
information, or the prior's support: `units_of(..., rows=...)`) and map every row.

This is the one home of the reduction: the verifiers, the certificates, the audits and the
m-ary verifier all use it. The independent checkers do not normalise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import overload

import numpy as np

from dpverify.records import record
from dpverify.theory.per_object import PerObject


@record(eq=False)
class Units:
    """w = lo + span w' (w' in [0, 1] on the rows that set lo and span), exactly, with w'
    for the whole table as exact rows (`exact`) and as floats (`unit`, each the float of
    the exact w')."""

    lo: Fraction
    span: Fraction
    constant: bool  # every entry (of the rows that set lo and span) is lo: span is 1
    exact: tuple[tuple[Fraction, ...], ...]
    unit: np.ndarray

    # ------------------------------------------------------------------ apply: to w'

    def to_unit(self, v: Fraction | int) -> Fraction:
        """An exact value in the user's units, normalised: (v - lo) / span."""
        return (Fraction(v) - self.lo) / self.span

    def normalised(self, v: float | None) -> float | None:
        """A float in the user's units, normalised (None or not finite: None)."""
        if v is None or not math.isfinite(v):
            return None
        lo, span = _float(self.lo), _float(self.span)
        if math.isfinite(span):
            return (v - lo) / span
        return float(self.to_unit(Fraction(v)))

    def tolerance(self, tol: float | Fraction) -> Fraction:
        """A tolerance relative to the range (normalised units) in the user's units."""
        return Fraction(tol) * self.span

    # ------------------------------------------------------------------ invert: to w

    def to_user(self, v: Fraction | int) -> Fraction:
        """A normalised exact value in the user's units: lo + span v."""
        return self.lo + self.span * Fraction(v)

    def user(self, v: Fraction | float | None) -> float | None:
        """A normalised value (exact, or a float; None or not finite: None) as a float in
        the user's units."""
        if v is None:
            return None
        if isinstance(v, float):
            if not math.isfinite(v):
                return None
            lo, span = _float(self.lo), _float(self.span)
            if math.isfinite(span):
                return lo + span * v
            v = Fraction(v)
        return _float(self.to_user(v))

    def user_width(self, d: float | Fraction) -> float:
        """A normalised difference (a gap, a width) in the user's units: span d."""
        return _float(Fraction(d) * self.span)

    def user_array(self, values: np.ndarray) -> np.ndarray:
        """Normalised floats (an array) in the user's units."""
        lo, span = _float(self.lo), _float(self.span)
        if math.isfinite(span):
            return lo + span * values
        hi = _float(self.lo + self.span)  # lo (1 - v) + hi v: no term overflows
        return lo * (1.0 - values) + hi * values

    @overload
    def dual_to_user(self, mu: np.ndarray, prior: np.ndarray) -> np.ndarray: ...

    @overload
    def dual_to_user(self, mu: Sequence[Fraction], prior: Sequence[Fraction]
                     ) -> list[Fraction]: ...

    def dual_to_user(self, mu, prior):
        """The duals mu' of the corner inequalities for the prior pi (normalised units) in
        the user's units: mu = span mu' + lo pi. The inequalities and sum(mu) = bound carry
        over by linearity (theory.md, "Certificates"). Exact for sequences of rationals,
        floats for arrays."""
        if isinstance(mu, np.ndarray):
            lo, span = _float(self.lo), _float(self.span)
            if math.isfinite(span):
                return span * mu + lo * np.asarray(prior, dtype=np.float64)
            hi = _float(self.lo + self.span)  # hi mu' + lo (pi - mu')
            return hi * mu + lo * (np.asarray(prior, dtype=np.float64) - mu)
        return [self.span * Fraction(m) + self.lo * Fraction(p)
                for m, p in zip(mu, prior, strict=True)]


def _float(v: Fraction) -> float:
    """The nearest float; +-inf beyond the float range (never OverflowError)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def units_of(table: Sequence[Sequence], rows: Sequence[int] | None = None) -> Units:
    """The units of an exact table (rows of gains or losses): lo and span over `rows`
    (default every row), w' for every row. Rows that are the same object (a tabulated
    gain table repeats one row per function value) are normalised once, and so is each
    entry object (a loss table holds one Fraction per distinct value: a count table of
    201 x 201 entries took 1.25 s entry by entry, measured at n = 200)."""
    all_rows = list(table)
    first: dict[int, int] = {}
    distinct: list[Sequence] = []
    index = np.empty(len(all_rows), dtype=np.intp)
    for i, row in enumerate(all_rows):
        j = first.setdefault(id(row), len(distinct))
        if j == len(distinct):
            distinct.append(row)
        index[i] = j
    fraction = PerObject(Fraction)  # each entry object once
    chosen = distinct if rows is None else [all_rows[i] for i in rows]
    for row in chosen:
        for v in row:
            fraction(v)
    # the range over the distinct entries of the chosen rows (every entry seen so far)
    entries = fraction.results()
    if not entries:
        raise ValueError("units_of: no entries in the rows that set the units")
    lo, hi = min(entries), max(entries)
    span = hi - lo if hi > lo else Fraction(1)

    def unit(v) -> tuple[Fraction, float]:
        w = (fraction(v) - lo) / span
        return w, float(w)

    normalised = PerObject(unit)  # (w', its float) of each entry object once
    exact_rows, float_rows = [], []
    for row in distinct:
        mapped = [normalised(v) for v in row]
        exact_rows.append(tuple(e[0] for e in mapped))
        float_rows.append([e[1] for e in mapped])
    width = len(exact_rows[0]) if exact_rows else 0
    floats = np.array(float_rows, dtype=np.float64).reshape(len(exact_rows), width)
    return Units(lo, span, hi == lo, tuple(exact_rows[j] for j in index.tolist()),
                 floats[index])
