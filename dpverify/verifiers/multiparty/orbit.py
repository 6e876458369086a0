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
from fractions import Fraction

from dpverify import clock
from dpverify.defaults import Method
from dpverify.errors import SizeLimitError
from dpverify.policy import (
    EXACT_ORBIT_WORK,
    ORBIT_EXACT_SIMPLEX_ORBITS,
    ORBIT_INTERVAL_FROM_PARTIES_EPSILON,
    ORBIT_WORK_PER_SECOND,
)
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.symmetric import Symmetry
from dpverify.theory.certificates.format import PROVED
from dpverify.theory.certificates.interval import IntervalCertificate
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.theory.orbits.certificates import (
    OrbitCertificate,
    OrbitProblem,
    average_certificate,
)
from dpverify.theory.orbits.interval import average_interval
from dpverify.verifiers.multiparty.hints import Hints
from dpverify.verifiers.multiparty.orbit_worst import (
    orbit_worst_certificate,
    orbit_worst_interval,
)
from dpverify.verifiers.multiparty.reductions import SYMMETRY, AgentProblem, reduces
from dpverify.verifiers.multiparty.routes import Outcome, decided
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import kind
from dpverify.verifiers.result import AgentResult, Verdict


def orbit_problem(spec: MultipartySpec, agent: AgentSpec) -> tuple[OrbitProblem, Symmetry]:
    """The agent's problem on orbits (a SizeLimitError when it is not symmetric): the
    Symmetry reduction (reductions.py)."""
    return SYMMETRY.apply(AgentProblem(spec, agent, Accuracy.AVERAGE, VerifyOptions()))


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
    exact transforms while they are small (policy.EXACT_ORBIT_WORK), else the interval
    ones. A worst case whose uniform candidate does not close then needs the float LP on
    orbits, guarded when it is built (orbit_worst.py)."""
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


def work_limit(spec: MultipartySpec, agent: AgentSpec, symmetry: Symmetry,
               accuracy: Accuracy, options: VerifyOptions) -> str | None:
    """The one guard of the orbit method's exact work, for choosing it and for building
    its certificate alike: why it is too large, or None. It bounds the work
    (--max-orbit-work) and its time: at policy.ORBIT_WORK_PER_SECOND, work that would
    outlast the time left in the run (--timeout; dpverify/clock.py) is not started."""
    work = orbit_work(symmetry, outputs_estimate(spec, agent), accuracy is Accuracy.WORST)
    if work > options.max_orbit_work:
        return (f"the orbit method needs about {work:.3g} units of work "
                f"({symmetry.orbit_count:,} orbits); the limit is "
                f"{options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    left = clock.current().remaining()
    seconds = work / ORBIT_WORK_PER_SECOND
    if left is not None and seconds > left:
        return (f"the orbit method needs about {work:.3g} units of work "
                f"({symmetry.orbit_count:,} orbits), about {seconds:.3g} s, and the run has "
                f"{left:.3g} s left (raise it with --timeout)")
    return None


def outputs_estimate(spec: MultipartySpec, agent: AgentSpec) -> int:
    """The number of outputs without tabulating (for the work estimate)."""
    from dpverify.spec.symmetric import count_values, is_count_function

    if agent.outputs is not None:
        return len(agent.outputs)
    if is_count_function(agent.function):
        return len(set(count_values(agent.function, spec.parties)))
    return 2


def exact_orbit_certificate(problem: AgentProblem, hints: Hints, *, fine: bool = True,
                            quick: bool = False) -> OrbitCertificate:
    """The exact orbit certificate of one agent and accuracy (SizeLimitError without a
    symmetry, or beyond the work limit of the exact transforms), at the fine brackets of
    e^eps or (not `fine`) the coarse ones the tolerance allows; `quick`, verify's (a
    checked bracket within --tol may stand for a long exact simplex: orbit_worst.py)."""
    spec, agent, options = problem.spec, problem.agent, problem.options
    orbits, symmetry = SYMMETRY.apply(problem)
    work = exact_orbit_work(symmetry, len(orbits.outputs), problem.worst)
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: {agent.name}: the exact orbit certificate needs about "
            f"{work:.3g} units of exact work ({symmetry.orbit_count:,} orbits); the limit "
            f"is {options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    lower, upper, exact = class_lambdas(spec, orbits.classes, None if fine else options.tol)
    if not problem.worst:
        return average_certificate(agent.name, orbits, lower, upper, exact)
    return orbit_worst_certificate(agent.name, orbits, lower, upper, exact, options, hints,
                                   quick=quick)


def interval_orbit_certificate(problem: AgentProblem, hints: Hints) -> IntervalCertificate:
    """The interval orbit certificate (arb balls) at the fine brackets of e^eps."""
    spec, agent, options = problem.spec, problem.agent, problem.options
    orbits, symmetry = SYMMETRY.apply(problem)
    work = interval_orbit_work(symmetry, len(orbits.outputs))
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: {agent.name}: the orbit method needs about {work:.3g} units "
            f"of work ({symmetry.orbit_count:,} orbits); the limit is "
            f"{options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
    lower, upper, _ = class_lambdas(spec, orbits.classes)
    if not problem.worst:
        return average_interval(agent.name, orbits, lower, upper)[0]
    return orbit_worst_interval(agent.name, orbits, lower, upper, options, hints)


def orbit_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                      options: VerifyOptions, *, fine: bool = True) -> OrbitCertificate:
    """exact_orbit_certificate of one agent and accuracy, with hints of its own."""
    problem = AgentProblem(spec, agent, Accuracy(accuracy), options)
    return exact_orbit_certificate(problem, Hints(), fine=fine)


def orbit_interval_certificate(spec: MultipartySpec, agent: AgentSpec,
                               accuracy: Accuracy | str, options: VerifyOptions
                               ) -> IntervalCertificate:
    """interval_orbit_certificate of one agent and accuracy, with hints of its own."""
    problem = AgentProblem(spec, agent, Accuracy(accuracy), options)
    return interval_orbit_certificate(problem, Hints())


def use_interval(spec: MultipartySpec, symmetry: Symmetry, outputs: int, worst: bool) -> bool:
    """Whether `verify` builds the interval certificate first: beyond
    policy.EXACT_ORBIT_WORK, with lambdas from epsilon from
    policy.ORBIT_INTERVAL_FROM_PARTIES_EPSILON parties, or for a worst case on more than
    policy.ORBIT_EXACT_SIMPLEX_ORBITS orbits."""
    if spec.lambdas_exact is None and spec.parties >= ORBIT_INTERVAL_FROM_PARTIES_EPSILON:
        return True
    if worst and symmetry.orbit_count > ORBIT_EXACT_SIMPLEX_ORBITS:
        return True
    return exact_orbit_work(symmetry, outputs, worst) > EXACT_ORBIT_WORK


HOW = {"exact": "exact orbit certificate (python-flint integers)",
       "interval": "interval orbit certificate (arb balls)"}


def orbit_result(problem: AgentProblem, hints: Hints) -> AgentResult:
    """One (agent, accuracy) by the orbit method: where exact integers are the cost
    (use_interval) the interval certificate first, then the exact one at the coarse
    brackets of e^eps; then (always) the exact one at the fine brackets (routes.decided).
    The independent checker confirms each, and a certificate it rejects ends the search (a
    bug, never a pass; proof.first_deciding)."""
    start = time.perf_counter()
    found, verdict = decided(ORBIT, problem, hints)
    how = HOW[kind(found)]
    if verdict.verdict is Verdict.OPTIMAL:
        what = ("proved" if found.status == PROVED else
                f"bracketed within {float(found.bound - found.value):.3g}")
        reason = f"{what} by the {how}, checked independently"
    else:
        reason = f"undecided: the {how} {verdict.how}"
    return AgentResult(problem.agent.name, problem.accuracy.value, float(found.bound),
                       float(found.value), verdict.verdict, time.perf_counter() - start,
                       reason=reason, method=Method.ORBIT, proof=verdict.proof,
                       code=verdict.code)


def verify_orbit_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       options: VerifyOptions) -> AgentResult:
    """orbit_result of one agent and accuracy, with hints of its own."""
    return orbit_result(AgentProblem(spec, agent, Accuracy(accuracy), options), Hints())


class OrbitRoute:
    """The orbit method (module docstring): a route and a certificate maker (routes.py)
    on the Symmetry reduction."""

    method = Method.ORBIT

    def fits(self, problem: AgentProblem) -> str | None:
        """Why the orbit method does not fit (None when it does): no symmetry that reduces
        the problem, or too much exact work (`work_limit`)."""
        why = SYMMETRY.accepts(problem)
        if why is not None:
            return why
        symmetry = reduces(problem.spec, problem.agent)
        assert symmetry is not None
        return work_limit(problem.spec, problem.agent, symmetry, problem.accuracy,
                          problem.options)

    def use_interval(self, problem: AgentProblem) -> bool:
        orbits, symmetry = SYMMETRY.apply(problem)
        return use_interval(problem.spec, symmetry, len(orbits.outputs), problem.worst)

    def interval(self, problem: AgentProblem, hints: Hints) -> IntervalCertificate:
        return interval_orbit_certificate(problem, hints)

    def exact(self, problem: AgentProblem, hints: Hints, *, fine: bool = True,
              quick: bool = False) -> OrbitCertificate:
        return exact_orbit_certificate(problem, hints, fine=fine, quick=quick)

    def run(self, problem: AgentProblem, hints: Hints) -> Outcome:
        return Outcome(orbit_result(problem, hints), hints)


ORBIT = OrbitRoute()
