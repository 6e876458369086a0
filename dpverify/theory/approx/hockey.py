"""The hockey-stick divergence of an explicit protocol: the delta it achieves for each party
at a claimed epsilon, and its privacy profile delta(epsilon) (docs/theory.md, "Approximate
privacy").

KOV 2015, eq. (12): a protocol is (epsilon_i, delta_i)-DP for party i when, for every x_-i,
both orders a != b of x_i and every set T of transcripts,
P(T | a, x_-i) <= lambda_i P(T | b, x_-i) + delta_i (lambda_i = e^epsilon_i). The worst
set is {t : P(t | a, x_-i) > lambda_i P(t | b, x_-i)}, so the condition is that every
hockey-stick sum

    HS_i(x_-i, a -> b) = sum_t max(0, P(t | a, x_-i) - lambda_i P(t | b, x_-i))

is at most delta_i; the achieved delta at lambda_i is their maximum. It is a sum of
positively homogeneous terms, so transcripts with proportional columns (the classes of
theory/protocols/tree.py) may be summed first: P on the classes gives the same sums.

Exact for exact transcripts and a rational lambda (P = num / den, lambda = p / q:
HS = sum_t max(0, q A - p B) / (q den)). HS is non-increasing in lambda, so for an
irrational lambda = e^epsilon, rational brackets lo <= lambda <= hi (theory/exact.py) give
the exact bracket HS(hi) <= HS(lambda) <= HS(lo) (`DeltaBracket`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.theory.exact import exp_bracket, lambda_brackets
from dpverify.theory.protocols.transcripts import Transcripts
from dpverify.theory.protocols.tree import transcript_classes

Number = Fraction | float


def ordered_pairs(m: int) -> list[tuple[int, int]]:
    """The directions (a, b), a != b, of a party with m symbols ((0, 1), (1, 0) for a bit)."""
    return [(a, b) for a in range(m) for b in range(m) if a != b]


def hockey_sums(tr: Transcripts, party: int, lam: Number) -> np.ndarray:
    """HS_i(x_-i, a -> b) for party i (1-based): shape (directions, inputs of the others),
    directions as `ordered_pairs`, the others' inputs in mixed radix (x1 first). Fractions
    (object array) for exact transcripts and a rational `lam`, floats otherwise."""
    axis = party - 1
    shape = tuple(tr.alphabets) + (tr.num.shape[1],)
    exact = tr.exact and isinstance(lam, Fraction | int)
    cube = tr.num.reshape(shape) if exact else tr.floats().reshape(shape)
    out = []
    for a, b in ordered_pairs(tr.alphabets[axis]):
        A = np.take(cube, a, axis=axis).reshape(-1, shape[-1])
        B = np.take(cube, b, axis=axis).reshape(-1, shape[-1])
        if exact:
            p, q = Fraction(lam).numerator, Fraction(lam).denominator
            diff = q * A - p * B
            sums = [int(sum(v for v in row if v > 0)) for row in diff.tolist()]
            out.append([Fraction(s, q * tr.den) for s in sums])
        else:
            out.append(np.clip(A - float(lam) * B, 0.0, None).sum(axis=1).tolist())
    return np.array(out, dtype=object if exact else np.float64)


def achieved_delta(tr: Transcripts, party: int, lam: Number) -> Number:
    """The smallest delta for which the protocol is (lambda, delta)-DP for `party`: the
    largest hockey-stick sum (module docstring)."""
    sums = hockey_sums(tr, party, lam)
    if sums.dtype.kind == "O":
        return max(sums.ravel().tolist(), default=Fraction(0))
    return float(sums.max(initial=0.0))


@record
class DeltaBracket:
    """lower <= the achieved delta at the true level <= upper, exactly (equal when the
    level is rational)."""

    lower: Fraction
    upper: Fraction

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    def meets(self, claim: Fraction) -> bool | None:
        """True when the claim is proved met (upper <= claim), False when proved missed
        (lower > claim), None when the bracket straddles it."""
        if self.upper <= claim:
            return True
        if self.lower > claim:
            return False
        return None


def delta_bracket(tr: Transcripts, party: int, lam_lo: Fraction, lam_hi: Fraction
                  ) -> DeltaBracket:
    """The achieved delta of an exact protocol at a level lam_lo <= lambda <= lam_hi."""
    if not tr.exact:
        raise ValueError("an exact bracket needs exact transcripts")
    upper = Fraction(achieved_delta(tr, party, Fraction(lam_lo)))
    lower = upper if lam_hi == lam_lo else Fraction(achieved_delta(tr, party, Fraction(lam_hi)))
    return DeltaBracket(lower, upper)


def exact_protocol_transcripts(spec: ProtocolSpec, max_bytes: int = 256 << 20
                               ) -> Transcripts:
    """P on the classes of proportional columns, exactly (theory/protocols/tree.py); a
    ValueError when it would take more than about `max_bytes`."""
    classes = transcript_classes(spec, max_bytes=max_bytes)
    if classes.weights is None or classes.matrix_bytes() > max_bytes:
        raise ValueError("the protocol's exact transcript matrix is too large")
    return classes.transcripts()


def protocol_deltas(spec: ProtocolSpec, tr: Transcripts | None = None
                    ) -> tuple[DeltaBracket, ...]:
    """Each party's achieved delta at the protocol's claimed levels (exact for `lambda`
    claims, an exact bracket for `epsilon` claims)."""
    tr = exact_protocol_transcripts(spec) if tr is None else tr
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    return tuple(delta_bracket(tr, i + 1, lower[i], upper[i]) for i in range(spec.parties))


@record
class ProfilePoint:
    """delta(epsilon) for one party at one epsilon: an exact bracket."""

    epsilon: Fraction
    delta: DeltaBracket


def privacy_profile(tr: Transcripts, party: int, epsilons: Sequence[Number]
                    ) -> tuple[ProfilePoint, ...]:
    """The privacy profile delta_i(epsilon) = the achieved delta at e^epsilon, on a grid
    of epsilons (each read as the exact rational it denotes), as exact brackets. It is
    non-increasing in epsilon, and 0 from epsilon_i* = ln lambda_i* on (the pure level)."""
    out = []
    for eps in epsilons:
        e = Fraction(eps)
        if e < 0 or not math.isfinite(float(e)):
            raise ValueError(f"epsilon must be a finite number >= 0: {eps}")
        lo, hi = exp_bracket(e)
        out.append(ProfilePoint(e, delta_bracket(tr, party, lo, hi)))
    return tuple(out)
