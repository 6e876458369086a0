"""The privacy profile of a protocol file, `audit --profile` (docs/theory.md, "Approximate
privacy"): for each party, delta_i(epsilon) = its achieved delta at e^epsilon (the largest
hockey-stick sum, KOV 2015 eq. (12); theory/approx/hockey.py) on a grid of epsilons,
each an exact bracket (exact at epsilon = 0; e^epsilon is irrational elsewhere, and the
rational brackets of theory/exact.py bound it within about 1e-19).

The profile is non-increasing in epsilon and 0 from the pure level the party achieves,
epsilon_i* = ln lambda_i*, on; a protocol that claims (epsilon_i, delta_i) meets its claim
exactly when its profile at epsilon_i is at most delta_i.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpverify.errors import SizeLimitError
from dpverify.notebook import Notebook
from dpverify.records import record
from dpverify.spec.protocol_model import ProtocolSpec
from dpverify.theory.approx.hockey import (
    DeltaBracket,
    exact_protocol_transcripts,
    privacy_profile,
)

DEFAULT_POINTS = 21
MAX_PROFILE_POINTS = 1000


def claimed_epsilons(spec: ProtocolSpec) -> tuple[float, ...]:
    if spec.epsilons_exact is not None:
        return tuple(float(e) for e in spec.epsilons_exact)
    return tuple(math.log(float(v)) for v in spec.lambdas)


def default_grid(spec: ProtocolSpec) -> tuple[Fraction, ...]:
    """0 to twice the largest claimed epsilon (rounded up to a tenth; 0 to 1 when every
    claim is epsilon = 0), in DEFAULT_POINTS exact steps."""
    top = max(claimed_epsilons(spec), default=0.0)
    end = Fraction(math.ceil(20 * top), 10) if top > 0 else Fraction(1)
    step = end / (DEFAULT_POINTS - 1)
    return tuple(i * step for i in range(DEFAULT_POINTS))


@record(eq=False, repr=False)
class PrivacyProfile(Notebook):
    """delta_i(epsilon) for every party (`deltas[i][j]` at `epsilons[j]`), with the claims;
    its records (and notebook table) one per epsilon, as `audit --profile` prints it."""

    problem: str
    source: str
    epsilons: tuple[Fraction, ...]
    deltas: tuple[tuple[DeltaBracket, ...], ...]
    claimed_epsilons: tuple[float, ...]
    claimed_deltas: tuple[Fraction, ...]

    def to_records(self) -> list[dict[str, Any]]:
        """One row per epsilon of the grid: `epsilon`, then `party i` (the upper end of
        party i's exact bracket of delta there)."""
        return [{"epsilon": float(e), **{f"party {i + 1}": float(row[j].upper)
                                         for i, row in enumerate(self.deltas)}}
                for j, e in enumerate(self.epsilons)]

    def to_json(self) -> dict[str, Any]:
        """`{"epsilons": [...], "parties": [{"party", "claimed_epsilon", "claimed_delta",
        "deltas", "deltas_lower"}]}`: floats, each delta the upper end of its exact
        bracket (a claim is proved met when it is at most the claim) and the lower end
        beside it."""
        return {"epsilons": [float(e) for e in self.epsilons], "parties": [
            {"party": i + 1, "claimed_epsilon": self.claimed_epsilons[i],
             "claimed_delta": str(self.claimed_deltas[i]),
             "deltas": [float(b.upper) for b in row],
             "deltas_lower": [float(b.lower) for b in row]}
            for i, row in enumerate(self.deltas)]}


def protocol_profile(spec: ProtocolSpec, epsilons: Sequence[Fraction] | None = None
                     ) -> PrivacyProfile:
    """The privacy profile of every party of `spec` on `epsilons` (default_grid when None).
    SizeLimitError (exit 3) when the exact transcripts are too large to hold."""
    grid = tuple(Fraction(e) for e in (default_grid(spec) if epsilons is None else epsilons))
    if len(grid) > MAX_PROFILE_POINTS:
        raise SizeLimitError(f"{spec.source}: {len(grid)} epsilons; a profile takes at most "
                             f"{MAX_PROFILE_POINTS}")
    try:
        tr = exact_protocol_transcripts(spec)
    except ValueError as exc:
        raise SizeLimitError(f"{spec.source}: no privacy profile: {exc}") from None
    deltas = tuple(tuple(p.delta for p in privacy_profile(tr, i + 1, grid))
                   for i in range(spec.parties))
    return PrivacyProfile(spec.name, spec.source, grid, deltas, claimed_epsilons(spec),
                          tuple(spec.deltas))
