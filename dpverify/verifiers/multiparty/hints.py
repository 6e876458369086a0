"""What the routes of one agent and accuracy hand on (routes.py): the float solutions that
become hints of exact certificates, computed once.

`Hints` holds the LP route's float result (its RR rule and the relaxed LP's prior, and
why the floats did not decide), the certificate makers the planner settles by, and a
memo of every float LP solved for a certificate: RR's worst-case LP on all inputs (or on
input orbits), and the worst-case LP on class orbits (orbit_worst.py), keyed by what they
are solved at. So the interval certificate, the exact certificate at the coarse and at
the fine brackets of e^eps, and the exact settling of the LP's verdicts share one solve
(on the symmetric worst case the interval route and the exact route solved the same
float LP twice; the all-input worst case up to three times).

The hint choice of the worst case on all inputs (`WorstPlan`): the verifier's own hints
when it gave them (RR's float rule, the relaxed LP's prior), else RR's worst-case LP: on
the orbits of the problem's symmetries when they reduce it enough (a symmetric XOR at
k = 10 has 11 orbits), by the dense interior-point method from DENSE_FROM_INPUTS inputs
without symmetry (at an extreme level from the sub-cubes over the extreme parties first,
and beyond the dense method's inputs from them alone: `dense_hints`), else on all inputs
in chain form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dpverify.defaults import LpForm
from dpverify.errors import DpverifyError, SizeLimitError, SolverError
from dpverify.lp.builder import chain_nonzeros
from dpverify.policy import (
    DENSE_FALLBACK_INPUTS,
    DENSE_FALLBACK_SECONDS,
    DENSE_FALLBACK_WIDTH,
    DENSE_FROM_INPUTS,
    EXTREME_ENTRY,
    MAX_DENSE_INPUTS,
    REDUCED_FACTOR,
    SPLIT_ENTRIES,
    SPLIT_MARGIN,
    SPLIT_PARTIES,
    SPLIT_SECONDS,
)
from dpverify.spec.model import AgentSpec, AgentTable, MultipartySpec
from dpverify.theory.certificates import (
    MAX_EXACT_ROWS,
    Orbits,
    WorstHint,
    exact_rows,
    own_bits,
    symmetry_orbits,
    trivial_orbits,
)
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic, has_mass
from dpverify.theory.worst_lp import WorstLp, solve_float
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import AgentResult

if TYPE_CHECKING:
    from dpverify.theory.worst_ipm import DenseWorst
    from dpverify.verifiers.multiparty.reductions import AgentProblem
    from dpverify.verifiers.multiparty.routes import CertificateMaker

__all__ = ["Hints", "WorstPlan", "beyond_floats", "estimate_worst_nonzeros", "worst_plan"]

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Hints:
    """What the routes of one agent and accuracy hand on (module docstring). `lp` is the
    LP route's float result (values in the user's units, `rule`, `pi`), `makers` the
    certificate makers the exact settling takes, in the planner's order; `memo` the float
    solutions already computed (shared by every copy)."""

    lp: AgentResult | None = None
    makers: tuple[CertificateMaker, ...] = ()
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    def with_lp(self, lp: AgentResult | None) -> Hints:
        """These hints with the LP route's float result."""
        return replace(self, lp=lp)

    def once(self, key: Any, compute: Callable[[], T]) -> T:
        """`compute()` the first time `key` is asked for, its value (or its error, a
        limit or a solver failure) every time after."""
        if key not in self.memo:
            try:
                self.memo[key] = (compute(), None)
            except DpverifyError as exc:
                self.memo[key] = (None, exc)
        value, error = self.memo[key]
        if error is not None:
            raise error
        return value


def estimate_worst_nonzeros(spec: MultipartySpec, agent: AgentSpec, orbits: Orbits,
                            table: AgentTable) -> int:
    """Non-zeros of the float LP a worst-case certificate solves (for the size guard)."""
    n = spec.num_inputs
    m = len(table.outputs)
    reduced = orbits.count * orbits.count * m
    full = m * (chain_nonzeros([2] * spec.parties, [2] * spec.parties) + n + 1) + n
    return reduced if use_reduced(orbits, n) else full


def use_reduced(orbits: Orbits, n: int) -> bool:
    """Whether RR's worst-case LP is solved on input orbits (policy.REDUCED_FACTOR)."""
    return orbits.count < n and orbits.count * orbits.count <= REDUCED_FACTOR * n


@dataclass(frozen=True, eq=False)
class WorstPlan:
    """What a worst-case certificate on all inputs needs: the orbits of its LP, the hints
    the verifier gave (`given`), and RR's own LP solved on demand (`solved`, once per
    agent through the hints' memo)."""

    problem: AgentProblem
    orbits: Orbits
    bits: list
    estimate: int
    given: dict | None
    too_large: SizeLimitError
    hints: Hints

    @property
    def spec(self) -> MultipartySpec:
        return self.problem.spec

    @property
    def party(self) -> int:
        return self.problem.agent.party

    @property
    def fits(self) -> bool:
        return self.estimate <= self.problem.options.nonzero_limit

    def solved(self) -> dict:
        """RR's worst-case LP's hints per sub-problem (the dense IPM without symmetry from
        DENSE_FROM_INPUTS inputs; SizeLimitError beyond --max-nonzeros): solved once."""
        n = self.spec.num_inputs
        unit = self.problem.units.unit
        extreme = beyond_floats(self.spec.lambdas)
        if self.orbits.count == n and (n <= MAX_DENSE_INPUTS or extreme) and (
                n >= DENSE_FROM_INPUTS or extreme):
            # extreme levels too (policy.EXTREME_ENTRY): the dense method keeps every entry;
            # beyond its inputs, the sub-cubes over the extreme parties alone
            return self.hints.once(("dense-worst", self.party),
                                   lambda: dense_hints(self.spec, unit, self.party, self.bits,
                                                       self.problem.options, self.too_large))
        if not self.fits:
            raise self.too_large
        found = self.hints.once(("rr-worst", self.party, self.orbits.count),
                                lambda: solve_hints(self.spec, unit, self.party, self.orbits,
                                                    self.bits, self.problem.options))
        # None: the hint LP failed on a problem small enough for the exact simplex alone
        return found if found is not None else {b: None for b in self.bits}


def worst_plan(problem: AgentProblem, hints: Hints) -> WorstPlan:
    """The plan of a worst-case certificate on all inputs (WorstPlan)."""
    spec, agent, table = problem.spec, problem.agent, problem.table
    party = agent.party
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    assert keys is not None  # the loader sets one of them
    n = spec.num_inputs
    orbits = symmetry_orbits(keys, table.gain_exact, party)
    if not use_reduced(orbits, n):
        orbits = trivial_orbits(spec.parties)
    estimate = estimate_worst_nonzeros(spec, agent, orbits, table)
    too_large = SizeLimitError(
        f"{spec.source}: the worst-case certificate of {agent.name} needs an LP with "
        f"about {estimate:.3g} non-zeros; the limit is {problem.options.nonzero_limit:,} "
        f"(raise it with --max-nonzeros), and the dense method takes at most "
        f"{MAX_DENSE_INPUTS} inputs without symmetry")
    given = None
    if orbits.count == n and hints.lp is not None and hints.lp.rule is not None:
        given = hints_from_result(spec, party, hints.lp)
    return WorstPlan(problem, orbits, [None] if party == 0 else [0, 1], estimate, given,
                     too_large, hints)


def hints_from_result(spec: MultipartySpec, party: int, result: AgentResult) -> dict | None:
    """Hints on all inputs from the verifier: RR's float rule, the relaxed LP's prior."""
    n = spec.num_inputs
    rule = np.asarray(result.rule, dtype=float)
    pi = None if result.pi is None else np.asarray(result.pi, dtype=float)
    if party == 0:
        return {None: WorstHint(rule=rule, prior=normalised(pi), x_orbits=np.arange(n))}
    out = {}
    bits = own_bits(spec.parties, party)
    for b in (0, 1):
        rel = np.flatnonzero(bits == b)
        prior = None if pi is None else normalised(pi[rel])
        out[b] = WorstHint(rule=rule[b], prior=prior, x_orbits=rel)
    return out


def beyond_floats(lambdas: Sequence[float]) -> bool:
    """Whether some privacy level is extreme (policy.EXTREME_ENTRY): 1/(1 + lambda)
    below it."""
    return any(1.0 / (1.0 + float(lam)) < EXTREME_ENTRY for lam in lambdas)


def dense_hints(spec: MultipartySpec, gain: np.ndarray, party: int, bits: list,
                options: VerifyOptions, too_large: SizeLimitError | None = None) -> dict:
    """Hints on all inputs for a worst case without symmetry on DENSE_FROM_INPUTS to
    MAX_DENSE_INPUTS inputs, or at an extreme level (beyond_floats), each end the best of:

    * at an extreme level, the sub-cubes over the extreme parties (`cube_hints`,
      theory/worst_candidates.py), first;
    * while the bracket is wider than policy.SPLIT_MARGIN of the tolerance, the dense
      interior-point method (theory/worst_ipm.py), then HiGHS's dense LP
      (`better_ends`, up to policy.DENSE_FALLBACK_INPUTS inputs);
    * a deterministic rule (a constant one, the prior's Bayes rule) when it is better.

    Beyond MAX_DENSE_INPUTS inputs only the sub-cubes are tried: `too_large` (or a
    SizeLimitError naming the dense method's limit) when they leave the bracket wider than
    the tolerance."""
    from dpverify.theory.worst_candidates import best_candidate, best_ends  # lazy: dense only
    from dpverify.theory.worst_ipm import dense_worst

    solve_ = options.solver().tight(1e-10)  # the polish's small LPs

    def simplex(program):  # the sub-cubes' dense LPs: the simplex ends the closer
        return cube_solve(replace(program, solver="simplex"))

    cube_solve = solve_.at_most(SPLIT_SECONDS)

    # the bracket that spares the dense method (after the sub-cubes) and HiGHS's fallback:
    # within the tolerance (gains in [0, 1]) by a margin far above the interval
    # certificate's rounding (about 1e-16)
    enough = max(DENSE_FALLBACK_WIDTH, SPLIT_MARGIN * float(options.tol))
    out = {}
    for b in bits:
        relevant = None if b is None else own_bits(spec.parties, party) == b
        lp = WorstLp.over_inputs(spec.lambdas, gain, relevant)
        found = None
        if beyond_floats(spec.lambdas):  # sub-cubes over the extreme parties first
            found = cube_hints(lp, spec.lambdas, simplex, enough)
        if lp.channel.columns > MAX_DENSE_INPUTS:  # the sub-cubes alone
            if found is None or found.width > float(options.tol):
                raise too_large or SizeLimitError(
                    f"the dense worst-case method takes at most {MAX_DENSE_INPUTS} inputs")
        elif found is None or found.width > enough:
            # one BLAS thread, and again on every thread when it stalls (its stalls follow
            # its rounding: theory/worst_ipm.py, dense_worst), the better ends kept
            dense = dense_worst(lp, solve=solve_)
            found = dense if found is None else best_ends(found, dense)
            if found.width > enough and lp.channel.columns <= DENSE_FALLBACK_INPUTS:
                found = better_ends(lp, found, options, enough)  # then HiGHS's dense LP
        if found.width > DENSE_FALLBACK_WIDTH:  # a deterministic rule may meet the bound
            better = best_candidate(lp, found.prior, found.lower)
            if better is not None:
                found = replace(found, lower=better[0], rule=better[1])
        out[b] = WorstHint(rule=found.rule, prior=found.prior, x_orbits=lp.rows)
    return out


def cube_hints(lp: WorstLp, lambdas: Sequence[float], solve: Callable, enough: float
               ) -> DenseWorst | None:
    """The best ends of the sub-cubes over the extreme parties at each of
    policy.SPLIT_ENTRIES (each set of parties once), until the bracket is within `enough`;
    None when no party is extreme enough (theory/worst_candidates.py)."""
    from dpverify.theory.worst_candidates import best_ends, split_parties, split_worst

    found = None
    tried: set[tuple[int, ...]] = set()
    for entry in SPLIT_ENTRIES:
        fixed = tuple(split_parties(lambdas, entry, SPLIT_PARTIES))
        if fixed in tried:
            continue
        tried.add(fixed)
        cube = split_worst(lp, lambdas, entry, SPLIT_PARTIES, solve, DENSE_FALLBACK_INPUTS)
        if cube is not None:
            found = cube if found is None else best_ends(found, cube)
        if found is not None and found.width <= enough:
            break
    return found


def better_ends(lp: WorstLp, found: DenseWorst, options: VerifyOptions,
                good: float = DENSE_FALLBACK_WIDTH) -> DenseWorst:
    """The dense result with each end replaced by HiGHS's solve of the dense LP (rows
    scaled, entries below what HiGHS keeps dropped: any rule and prior are still bounded
    exactly) when better: by the interior point and, while the bracket is still wider than
    `good`, by the simplex (which closed brackets the interior point left at 4e-9 among
    levels of 14 to 27, to 3e-11 in a second)."""
    from dpverify.theory.worst_ipm import float_bracket

    solve_ = options.solver().at_most(DENSE_FALLBACK_SECONDS).tight(1e-10)
    for method in ("", "simplex"):
        if found.width <= good:
            break
        solve_with = solve_ if not method else (
            lambda program, how=method: solve_(replace(program, solver=how)))
        other = solve_float(lp, solve_with, form=LpForm.DENSE, scale_rows=True,
                            drop_tiny=True, name="rr-worst-fallback")
        if not other.ok:
            continue
        lower, upper = float_bracket(lp, other.masses, other.rule)
        rule = clean_stochastic(other.rule) if lower > found.lower else found.rule
        prior = clean_distribution(other.masses) if upper < found.upper else found.prior
        found = replace(found, rule=rule, prior=prior, lower=max(lower, found.lower),
                        upper=min(upper, found.upper))
    return found


def normalised(p: np.ndarray | None) -> np.ndarray | None:
    """A float prior hint made a distribution; None (no hint) when it is not finite or has
    no mass to speak of (theory/exact_rows.py)."""
    if p is None or not np.isfinite(p).all() or not has_mass(p, 1e-9):
        return None
    return clean_distribution(p)


def solve_hints(spec: MultipartySpec, gain: np.ndarray, party: int, orbits: Orbits,
                bits: Sequence, options: VerifyOptions) -> dict | None:
    """Float hints per sub-problem; None when an LP failed but the exact simplex can take
    every sub-problem (theory.certificates.MAX_EXACT_ROWS); else the SolverError."""
    out = {}
    k = spec.parties
    try:
        for b in bits:
            relevant = None if b is None else own_bits(k, party) == b
            out[b] = rr_hint(spec.lambdas, gain, orbits, relevant, options)
    except SolverError:
        if all(exact_rows(orbits, party, b) <= MAX_EXACT_ROWS for b in bits):
            return None
        raise
    return out


def rr_hint(lambdas: Sequence[float], gain: np.ndarray, orbits: Orbits, relevant: Any,
            options: VerifyOptions) -> WorstHint:
    """RR's worst-case LP (theory/worst_lp.py) in floats, its rule and dual prior: on orbits
    (dense, rows scaled: a row a reads acc_a(Q) - t >= 0, and scaling it changes nothing;
    entries HiGHS cannot keep are dropped: this LP only gives hints, the certificate is
    exact), else on all inputs in chain form."""
    solve_ = options.solver()
    if orbits.count < gain.shape[0]:
        lp = WorstLp.over_input_orbits(lambdas, orbits, gain, relevant)
        found = solve_float(lp, solve_, form=LpForm.DENSE, scale_rows=True, drop_tiny=True,
                            name="rr-worst-orbits")
        what = "randomized-response worst-case (orbits)"
    else:
        lp = WorstLp.over_inputs(lambdas, gain, relevant)
        found = solve_float(lp, solve_, form=LpForm.CHAIN, name="rr-worst")
        what = "randomized-response worst-case"
    if not found.ok:
        sol = found.solution
        raise SolverError(f"{what} LP for the certificate: {sol.status.value} ({sol.message})")
    return WorstHint(rule=np.clip(found.rule, 0.0, None), prior=normalised(found.masses),
                     x_orbits=lp.rows)
