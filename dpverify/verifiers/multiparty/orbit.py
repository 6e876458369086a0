"""The orbit method: symmetric problems at any number of parties (docs/theory.md,
"Symmetry"; KOV 2015, Theorem 3.1).

For an agent whose gains are invariant under permutations of parties inside classes
(dpverify.spec.symmetric), every LP of the verifier is invariant under the group, so it has
an optimal solution constant on orbits (convexity: average any optimal solution over the
group). The verdict rests on the exact certificate on orbits
(theory/orbits/certificates.py), checked again by the independent orbit checker:

* average accuracy: the uniform prior; the certificate is built directly and exactly;
* worst case: RR's worst-case decision LP on orbits, solved in floats for a rule and a
  minimax prior, then exactly (the revised simplex of theory/exact_lp.py, from the float
  basis) when it is small, else the rationalised float solution, whose exact bounds
  bracket the optimum.

Coefficients span hundreds of orders of magnitude at large k (3^-1000 at lambda = 2,
k = 1000): no float LP ever decides a verdict here; floats only propose.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction

from dpverify.defaults import Method
from dpverify.errors import SizeLimitError
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.symmetric import Symmetry, agent_symmetry, orbit_table
from dpverify.theory.certificates.format import PROVED
from dpverify.theory.certificates.interval import IntervalCertificate
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.theory.orbits.certificates import (
    OrbitCertificate,
    OrbitProblem,
    average_certificate,
)
from dpverify.theory.orbits.interval import average_interval
from dpverify.theory.units import units_of
from dpverify.verifiers.multiparty.orbit_worst import (
    orbit_worst_certificate,
    orbit_worst_interval,
)
from dpverify.verifiers.multiparty.routes import reduces
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import first_deciding, kind
from dpverify.verifiers.result import AgentResult, Verdict


def orbit_problem(spec: MultipartySpec, agent: AgentSpec) -> tuple[OrbitProblem, Symmetry]:
    """The agent's problem on orbits (a SizeLimitError when it is not symmetric)."""
    symmetry = agent_symmetry(spec, agent)
    if symmetry is None:
        raise SizeLimitError(f"{spec.source}: {agent.name}: the function is not symmetric "
                             "(no orbit method)")
    table = orbit_table(spec, agent, symmetry)
    own = None if agent.party == 0 else symmetry.classes.index((agent.party,))
    return OrbitProblem(symmetry.classes, table.outputs, table.gain_exact, own), symmetry


# The exact orbit certificate (which can prove the optimum exactly) is built first while
# its integer work is at most this; beyond it `verify` builds the interval certificate
# (arb balls, theory/orbits/interval.py) first, and the exact one only when the interval
# bracket cannot decide. `certify` always builds the exact one.
EXACT_ORBIT_WORK = 2_000_000


def exact_orbit_work(symmetry: Symmetry, outputs: int, worst: bool) -> int:
    """A size for the exact route: integer operations of the exact transforms, about
    (orbits) x (sum of class sizes) x (columns transformed), and for the worst case the
    dense float LP on orbits (orbits^2 x outputs)."""
    columns = 2 * outputs + 3
    work = symmetry.orbit_count * sum(n + 1 for n in symmetry.sizes) * columns
    if worst:  # the float LP on orbits: a dense (orbits x orbits x outputs) matrix
        work = max(work, symmetry.orbit_count ** 2 * outputs)
    return work


def interval_orbit_work(symmetry: Symmetry, outputs: int) -> int:
    """A size for the interval route: the transforms by divide and conquer on arb
    polynomials, about (orbits) x (sum of log2(class size)^2) x (columns)."""
    columns = 2 * outputs + 3
    return symmetry.orbit_count * sum(max(1, (n + 1).bit_length()) ** 2
                                      for n in symmetry.sizes) * columns


def orbit_work(symmetry: Symmetry, outputs: int, worst: bool) -> int:
    """The size of the route `verify` takes first (for the guard, --max-orbit-work): the
    exact transforms while they are small (EXACT_ORBIT_WORK), else the interval ones. A
    worst case whose uniform candidate does not close then needs the float LP on orbits,
    guarded when it is built (orbit_worst.py)."""
    exact = exact_orbit_work(symmetry, outputs, worst)
    return exact if exact <= EXACT_ORBIT_WORK else interval_orbit_work(symmetry, outputs)


def class_lambdas(spec: MultipartySpec, classes, tol: Fraction | float | None = None
                  ) -> tuple[list[Fraction], list[Fraction], bool]:
    """(lower, upper) lambdas of every class, and whether they are exact: the fine brackets
    of e^eps, or (tol given) the coarse ones the verdict needs (theory/exact.py)."""
    if tol is None:
        lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    else:
        lower, upper = coarse_brackets(spec.lambdas_exact, spec.epsilons_exact, tol)
    return ([lower[c[0] - 1] for c in classes], [upper[c[0] - 1] for c in classes],
            lower == upper)


def orbit_fit(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
              options: VerifyOptions) -> str | None:
    """Why the orbit method does not fit (None when it does): no symmetry that reduces
    the problem, or too much exact work (`work_limit`)."""
    symmetry = reduces(spec, agent)
    if symmetry is None:
        return "the function has no symmetry to reduce by"
    return work_limit(spec, agent, symmetry, accuracy, options)


def work_limit(spec: MultipartySpec, agent: AgentSpec, symmetry: Symmetry,
               accuracy: Accuracy, options: VerifyOptions) -> str | None:
    """The one guard of the orbit method's exact work (--max-orbit-work), for choosing it
    and for building its certificate alike: why it is too large, or None."""
    work = orbit_work(symmetry, outputs_estimate(spec, agent), accuracy is Accuracy.WORST)
    if work > options.max_orbit_work:
        return (f"the orbit method needs about {work:.3g} units of work "
                f"({symmetry.orbit_count:,} orbits); the limit is "
                f"{options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    return None


def outputs_estimate(spec: MultipartySpec, agent: AgentSpec) -> int:
    """The number of outputs without tabulating (for the work estimate)."""
    from dpverify.spec.symmetric import count_values, is_count_function

    if agent.outputs is not None:
        return len(agent.outputs)
    if is_count_function(agent.function):
        return len(set(count_values(agent.function, spec.parties)))
    return 2


def orbit_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                      options: VerifyOptions, *, fine: bool = True) -> OrbitCertificate:
    """The exact orbit certificate of one agent and accuracy (SizeLimitError without a
    symmetry, or beyond the work limit of the exact transforms), at the fine brackets of
    e^eps or (not `fine`) the coarse ones the tolerance allows."""
    accuracy = Accuracy(accuracy)
    problem, symmetry = orbit_problem(spec, agent)
    worst = accuracy is Accuracy.WORST
    work = exact_orbit_work(symmetry, len(problem.outputs), worst)
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: {agent.name}: the exact orbit certificate needs about "
            f"{work:.3g} units of exact work ({symmetry.orbit_count:,} orbits); the limit "
            f"is {options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    lower, upper, exact = class_lambdas(spec, problem.classes, None if fine else options.tol)
    if not worst:
        return average_certificate(agent.name, problem, lower, upper, exact)
    return orbit_worst_certificate(agent.name, problem, lower, upper, exact, options)


def orbit_interval_certificate(spec: MultipartySpec, agent: AgentSpec,
                               accuracy: Accuracy | str, options: VerifyOptions
                               ) -> IntervalCertificate:
    """The interval orbit certificate (arb balls) at the fine brackets of e^eps."""
    problem, symmetry = orbit_problem(spec, agent)
    accuracy = Accuracy(accuracy)
    work = interval_orbit_work(symmetry, len(problem.outputs))
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: {agent.name}: the orbit method needs about {work:.3g} units "
            f"of work ({symmetry.orbit_count:,} orbits); the limit is "
            f"{options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    lower, upper, _ = class_lambdas(spec, problem.classes)
    if accuracy is Accuracy.AVERAGE:
        return average_interval(agent.name, problem, lower, upper)[0]
    return orbit_worst_interval(agent.name, problem, lower, upper, options)


# With lambdas from epsilon the exact orbit certificate carries brackets of e^eps in its
# integers (and its worst case an LP on orbits): from this many parties `verify` builds
# the interval one first. Below, the exact one is fast and `--method orbit` keeps the
# full LP's values to the last bits (tests/test_orbits.py compares them up to k = 8).
INTERVAL_FROM_PARTIES_EPSILON = 9


# With exact lambdas the worst case's exact certificate closes by the exact revised
# simplex when the float hints do not prove the optimum; beyond this many orbits its
# rational pivots grow (parity at lambda = 3/2 and 2: 64 orbits 1 s, 81 orbits 72 s), so
# `verify` brackets first (a checked bracket within --tol decides; `certify` stays exact).
EXACT_SIMPLEX_ORBITS = 64


def use_interval(spec: MultipartySpec, symmetry: Symmetry, outputs: int, worst: bool) -> bool:
    """Whether `verify` builds the interval certificate first: beyond EXACT_ORBIT_WORK,
    with lambdas from epsilon from INTERVAL_FROM_PARTIES_EPSILON parties, or for a worst
    case on more than EXACT_SIMPLEX_ORBITS orbits."""
    if spec.lambdas_exact is None and spec.parties >= INTERVAL_FROM_PARTIES_EPSILON:
        return True
    if worst and symmetry.orbit_count > EXACT_SIMPLEX_ORBITS:
        return True
    return exact_orbit_work(symmetry, outputs, worst) > EXACT_ORBIT_WORK


def interval_first(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy) -> bool:
    """use_interval for an agent (False when it has no symmetry that reduces it)."""
    symmetry = reduces(spec, agent)
    return symmetry is not None and use_interval(
        spec, symmetry, outputs_estimate(spec, agent), accuracy is Accuracy.WORST)


HOW = {"exact": "exact orbit certificate (python-flint integers)",
       "interval": "interval orbit certificate (arb balls)"}


def verify_orbit_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       options: VerifyOptions) -> AgentResult:
    """One (agent, accuracy) by the orbit method: where exact integers are the cost
    (use_interval) the interval certificate first, then the exact one at the coarse
    brackets of e^eps; then (always) the exact one at the fine brackets. The independent
    checker confirms each, and a certificate it rejects ends the search (a bug, never a
    pass; proof.first_deciding)."""
    start = time.perf_counter()
    problem, symmetry = orbit_problem(spec, agent)
    tol = units_of(problem.gain).tolerance(options.tol)
    worst = accuracy is Accuracy.WORST
    attempts: list[tuple[bool, Callable[[], OrbitCertificate | IntervalCertificate]]] = []
    if use_interval(spec, symmetry, len(problem.outputs), worst):
        attempts.append((True, lambda: orbit_interval_certificate(spec, agent, accuracy,
                                                                  options)))
        if spec.lambdas_exact is None:
            attempts.append((False, lambda: orbit_certificate(spec, agent, accuracy,
                                                              options, fine=False)))
    attempts.append((False, lambda: orbit_certificate(spec, agent, accuracy, options)))
    found, decided = first_deciding(spec, attempts, tol)
    how = HOW[kind(found)]
    if decided.verdict is Verdict.OPTIMAL:
        what = ("proved" if found.status == PROVED else
                f"bracketed within {float(found.bound - found.value):.3g}")
        reason = f"{what} by the {how}, checked independently"
    else:
        reason = f"undecided: the {how} {decided.how}"
    return AgentResult(agent.name, accuracy.value, float(found.bound), float(found.value),
                       decided.verdict, time.perf_counter() - start, reason=reason,
                       method=Method.ORBIT, proof=decided.proof)


class OrbitRoute:
    """The orbit method (module docstring)."""

    method = Method.ORBIT

    def fits(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             options: VerifyOptions) -> str | None:
        return orbit_fit(spec, agent, accuracy, options)

    def verify(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
               options: VerifyOptions) -> AgentResult:
        return verify_orbit_agent(spec, agent, accuracy, options)

    def certificate(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                    hint: AgentResult | None, options: VerifyOptions, *, fine: bool = True
                    ) -> OrbitCertificate:
        return orbit_certificate(spec, agent, accuracy, options, fine=fine)


ORBIT = OrbitRoute()
