"""The four-ray rank-one bound over every interactive (epsilon_i, delta_i)-DP protocol: the
LP of theory/approx/rays.py assembled with lp.builder, solved through lp.solve, and its
duals made an exact bound (theory/approx/certificate.py) at the upper rational brackets of
the levels (docs/theory.md, "Approximate privacy").

The LP (dense form), theta[s, l] >= 0 for every product of rays s and label l:

    sum_{s,l} T_s[x] theta[s, l] = 1                         for every input x   (duals mu)
    sum_{s,l} H_row,s theta[s, l] <= delta_i(row)            every hockey row    (duals nu)
    average: maximise (1/n) sum_{s,l} (sum_x gain(x, l) T_s[x]) theta[s, l]
    worst:   maximise t  s.t.  sum_{s,l} gain(x, l) T_s[x] theta[s, l] - t >= 0  (duals -pi)

The float optimum is a hint; what is reported is the exact bound, never above it by more
than the repair (about 1e-15 of the gains' range), and valid whatever the solver did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError
from dpverify.lp.builder import LpBuilder
from dpverify.spec.model import MultipartySpec
from dpverify.theory.approx.certificate import DualBound, dual_bound, exact_label_gains
from dpverify.theory.approx.rays import RayLpData, lp_nonzeros, ray_lp_data
from dpverify.verifiers.options import VerifyOptions

SNAP_DENOMINATOR = 10**6  # duals also tried as the nearest small rationals (exact optima)
TIGHT_FEASIBILITY = 1e-10


@dataclass(frozen=True, eq=False)
class FloatRayBound:
    """The float LP's optimum and duals (normalised gains), or why it failed."""

    value: float | None
    mu: np.ndarray | None = None
    nu: np.ndarray | None = None
    pi: np.ndarray | None = None
    theta: np.ndarray | None = None  # (products, labels)
    data: RayLpData | None = None
    failure: str = ""


def bound_nonzeros(k: int, deltas: Sequence[Fraction], labels: int, worst: bool) -> int:
    """The LP's non-zeros, estimated before anything is built (for --max-nonzeros)."""
    return lp_nonzeros(k, deltas, labels, worst)


def symbols_refusal(spec: MultipartySpec) -> SizeLimitError:
    """The refusal (exit 3, undecided) of delta > 0 with some alphabet > 2: what the
    dispatch tables raise for that setting (verifiers/dispatch.py)."""
    return SizeLimitError(
        f"{spec.source}: approximate privacy (delta > 0) is verified for parties holding "
        f"bits only, and this problem has alphabets {list(spec.alphabets)}: "
        "RR(epsilon, delta), the four-ray bound and the interactive search are built "
        "for two symbols (docs/theory.md, \"Approximate privacy\"); give delta = 0 "
        "(pure epsilon-DP, the ray-product method of more than two symbols) or "
        "alphabet = 2")


def float_ray_bound(lambdas: Sequence[float], deltas: Sequence[Fraction], gain: np.ndarray,
                    party: int, worst: bool, options: VerifyOptions) -> FloatRayBound:
    """Build and solve the LP of the module docstring at float levels."""
    data = ray_lp_data(lambdas, deltas, gain, party)
    T, H, G = data.points, data.hockey, data.label_gains
    n, S = T.shape
    L = G.shape[1]
    b = LpBuilder()
    input_rows = b.add_rows(n, 1.0, 1.0)
    hockey_rows = b.add_rows(H.shape[0], -np.inf, data.row_deltas)
    worst_rows = b.add_rows(n, 0.0, np.inf) if worst else None
    blocks = []
    for lab in range(L):
        g = G[:, lab]
        theta = b.add_cols(S, cost=0.0 if worst else (T.T @ g) / n)
        b.add_matrix(input_rows, theta, T)
        if H.shape[0]:
            b.add_matrix(hockey_rows, theta, H)
        if worst_rows is not None:
            b.add_matrix(worst_rows, theta, T * g[:, None])
        blocks.append(theta)
    if worst_rows is not None:
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(worst_rows, t, -1.0)
    lp = b.build(maximize=True, name=f"four-ray-{'worst' if worst else 'average'}",
                 drop_tiny=True)
    sol = options.solver().tight(TIGHT_FEASIBILITY)(lp)
    if not sol.optimal:
        return FloatRayBound(None, data=data, failure=(
            f"the four-ray LP did not solve ({sol.status.value}: {sol.message})"))
    return FloatRayBound(
        sol.objective, mu=sol.row_duals[input_rows], nu=sol.row_duals[hockey_rows],
        pi=-sol.row_duals[worst_rows] if worst_rows is not None else None,
        theta=np.stack([sol.x[blk] for blk in blocks], axis=1), data=data)


def _priors(n: int, pi: np.ndarray | None) -> list[list[Fraction]]:
    """The uniform prior (average); the dual prior clipped and normalised exactly, as the
    floats' exact values and as small rationals (worst case)."""
    if pi is None:
        return [[Fraction(1, n)] * n]
    out = []
    clipped = np.clip(pi, 0.0, None)
    for exact in ([Fraction(float(v)) for v in clipped],
                  [Fraction(float(v)).limit_denominator(SNAP_DENOMINATOR) for v in clipped]):
        total = sum(exact, Fraction(0))
        if total > 0:
            out.append([v / total for v in exact])
    return out


def exact_ray_bound(floats: FloatRayBound, lambdas_hi: Sequence[Fraction],
                    deltas: Sequence[Fraction], gain_exact: Sequence[Sequence[Fraction]],
                    party: int) -> DualBound | None:
    """The float duals made a proved bound at `lambdas_hi` (the upper brackets), trying
    the floats' exact values and the nearest small rationals; the smaller bound is kept."""
    if floats.mu is None or floats.nu is None:
        return None
    labels = exact_label_gains(gain_exact, party)
    n = len(labels)
    best: DualBound | None = None
    for snap in (False, True):
        def exact(v: float, snap: bool = snap) -> Fraction:
            f = Fraction(float(v))
            return f.limit_denominator(SNAP_DENOMINATOR) if snap else f

        mu = [exact(v) for v in floats.mu]
        nu = [max(exact(v), Fraction(0)) for v in floats.nu]
        for prior in _priors(n, floats.pi):
            cert = dual_bound(lambdas_hi, deltas, labels, prior, mu, nu)
            if best is None or cert.bound < best.bound:
                best = cert
    return best


def proved_ray_bound(lambdas: Sequence[float], lambdas_hi: Sequence[Fraction],
                     deltas: Sequence[Fraction], gain_unit: np.ndarray,
                     gain_exact: Sequence[Sequence[Fraction]], party: int, worst: bool,
                     options: VerifyOptions) -> tuple[Fraction | None, FloatRayBound]:
    """The proved four-ray bound (normalised gains) at levels whose upper rational
    brackets are `lambdas_hi`, or None (the float LP's `failure` says why); and the float
    LP, whose least favourable prior seeds the worst-case search."""
    floats = float_ray_bound(lambdas, deltas, gain_unit, party, worst, options)
    proved = exact_ray_bound(floats, lambdas_hi, deltas, gain_exact, party)
    return (None if proved is None else proved.bound), floats
