"""Gains normalised to [0, 1]: w = lo + span w' (exactly, and as floats), and the way
back to the user's units. The audit and the m-ary verifier decide on w' so that no verdict
depends on the scale of the gains (docs/theory.md, "Gains normalised to [0, 1]")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True, eq=False)
class Units:
    """Gains w = lo + span w', w' in [0, 1], exactly and as floats."""

    lo: Fraction
    span: Fraction
    unit: np.ndarray
    exact: list[list[Fraction]]

    def user(self, v: Fraction | float | None) -> float | None:
        """A normalised value (exact, or a float; None or not finite: None) in user units."""
        if v is None:
            return None
        if isinstance(v, float):
            return float(self.lo) + float(self.span) * v if math.isfinite(v) else None
        return float(self.lo + self.span * v)

    def normalised(self, v: float | None) -> float | None:
        """A float in user units, normalised."""
        return None if v is None else (v - float(self.lo)) / float(self.span)


def units_of(gain_exact) -> Units:
    """The units of an exact gain table (span 1 for a constant gain)."""
    flat = [v for row in gain_exact for v in row]
    lo, hi = min(flat), max(flat)
    span = hi - lo if hi > lo else Fraction(1)
    exact = [[(v - lo) / span for v in row] for row in gain_exact]
    return Units(lo, span, np.array([[float(v) for v in row] for row in exact],
                                    dtype=np.float64), exact)
