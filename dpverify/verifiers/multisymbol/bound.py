"""The upper bound for inputs with more than two symbols: the relaxed protocol LP over
products of extreme rays (docs/theory.md, section 6.2), solved in floats, then made an
exact bound from its duals (theory/symbols/certificate.py).

The LP is KOV 2015's (17) / (20) with the rays of each party's DP cone in place of the two
corners: P_l = (R_1 (x) ... (x) R_k) theta_l, one m_i x (2^m_i - 2) factor per party, in
the chain form of verifiers/multiparty/lps.py (one pass per party). Labels are outputs for the
observer
and a decision per own symbol for a party.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.defaults import LpForm
from dpverify.lp.builder import chain_nonzeros
from dpverify.lp.highs import SMALL_MATRIX_VALUE
from dpverify.records import record
from dpverify.spec.model import AgentSpec, MultipartySpec
from dpverify.theory.exact_rows import exact_distribution, has_mass, snap
from dpverify.theory.symbols.certificate import SNAP_DENOMINATOR, repaired_upper
from dpverify.theory.symbols.rays import ray_count, ray_matrix, symbol_label_gains
from dpverify.verifiers.multiparty.lps import PointFamily, relaxed_lp
from dpverify.verifiers.options import VerifyOptions, check_limit, lp_form

TIGHT_FEASIBILITY = 1e-10  # as verifiers/multiparty/corner_lp.py: well below the verdict tolerance


def ray_family(alphabets: Sequence[int], lambdas: Sequence[float]) -> PointFamily:
    """Every product of extreme rays, as one product family (one factor per party)."""
    return PointFamily(factors=tuple(ray_matrix(m, lam)
                                     for m, lam in zip(alphabets, lambdas, strict=True)))


def label_count(spec: MultipartySpec, agent: AgentSpec, outputs: int) -> int:
    return outputs if agent.party == 0 else outputs ** spec.alphabets[agent.party - 1]


def bound_nonzeros(spec: MultipartySpec, agent: AgentSpec, outputs: int,
                   form: str = LpForm.CHAIN) -> int:
    """Non-zeros of the ray-product LP of one agent (for the size guard)."""
    n = spec.num_inputs
    rays = [ray_count(m) for m in spec.alphabets]
    labels = label_count(spec, agent, outputs)
    if form == LpForm.DENSE:
        return labels * n * int(np.prod(rays)) * 2
    return labels * (chain_nonzeros(rays, list(spec.alphabets)) + 2 * n) + n


def check_bound_size(spec: MultipartySpec, agent: AgentSpec, outputs: int,
                     options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) a ray-product LP above --max-nonzeros."""
    labels = label_count(spec, agent, outputs)
    return check_limit(spec.source, bound_nonzeros(spec, agent, outputs, lp_form(options)),
                       options, f"alphabets {list(spec.alphabets)} and {labels} labels")


def rays_fit(alphabets: Sequence[int], lambdas: Sequence[float]) -> bool:
    """Whether every ray's smallest entry, 1 / (1 + (m - 1) lambda), stays above what
    HiGHS keeps (as verifiers/multiparty/corner_lp.py's float_lps_fit for the corners)."""
    return all(1.0 / (1.0 + (m - 1) * lam) >= SMALL_MATRIX_VALUE
               for m, lam in zip(alphabets, lambdas, strict=True))


@record(eq=False)
class FloatBound:
    """The float LP's optimum (normalised gains), its duals, its ray weights theta[s, l],
    or the reason it failed."""

    value: float | None
    mu: np.ndarray | None = None
    pi: np.ndarray | None = None
    theta: np.ndarray | None = None
    failure: str = ""


def float_bound(spec: MultipartySpec, label_gains: np.ndarray, worst: bool,
                options: VerifyOptions) -> FloatBound:
    """The ray-product LP at the problem's (float) levels."""
    if not rays_fit(spec.alphabets, spec.lambdas):
        return FloatBound(None, failure=(
            "a privacy level is beyond what a float LP keeps (a ray's smallest entry "
            f"1/(1+(m-1) lambda) is below {SMALL_MATRIX_VALUE:g})"))
    built = relaxed_lp(label_gains, [ray_family(spec.alphabets, spec.lambdas)], worst,
                       lp_form(options))
    sol = options.solver().tight(TIGHT_FEASIBILITY)(built.lp)
    if not sol.optimal:
        return FloatBound(None, failure=f"the ray-product LP did not solve "
                                        f"({sol.status.value}: {sol.message})")
    return FloatBound(
        sol.objective, mu=sol.row_duals[built.input_rows],
        pi=-sol.row_duals[built.worst_rows] if worst else None,
        theta=np.stack([sol.x[b] for b in built.blocks], axis=1))


def exact_priors(n: int, pi: np.ndarray | None) -> list[list[Fraction]]:
    """The uniform prior (average); or the LP's dual prior clipped at 0 and normalised
    exactly, as the floats' exact values and as the nearest small rationals (worst case:
    any distribution gives a valid bound, one near the LP's a tight one, and small
    rationals an exact optimum when the data are rational). Empty when it has no mass."""
    if pi is None:
        return [[Fraction(1, n)] * n]
    if not has_mass(pi):
        return []
    return [exact_distribution(pi), exact_distribution(pi, rounding=snap(SNAP_DENOMINATOR))]


@record(eq=False)
class ExactBound:
    """A proved upper bound (normalised gains): (C) holds for prior and mu on every product
    of rays at `lambdas` (the upper brackets), and bound = sum(mu)."""

    bound: Fraction
    prior: list[Fraction]
    mu: list[Fraction]
    lambdas: tuple[Fraction, ...]


def exact_bound(spec: MultipartySpec, agent: AgentSpec, floats: FloatBound,
                gain: Sequence[Sequence[Fraction]], upper: Sequence[Fraction]
                ) -> ExactBound | None:
    """The float duals made an exact bound (theory/symbols/certificate.py)."""
    if floats.mu is None:
        return None
    best = None
    for prior in exact_priors(spec.num_inputs, floats.pi):
        mu, bound = repaired_upper(upper, spec.alphabets, agent.party, gain, prior, floats.mu)
        if best is None or bound < best.bound:
            best = ExactBound(bound, prior, mu, tuple(upper))
    return best


def label_gains(spec: MultipartySpec, agent: AgentSpec, unit: np.ndarray) -> np.ndarray:
    """gain(x, label) for the agent (theory/symbols/rays.py)."""
    if agent.party == 0:
        return unit
    return symbol_label_gains(unit, spec.alphabets, agent.party)[0]
