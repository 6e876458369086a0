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

from dpverify.errors import SizeLimitError
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.numbers import parse_rational
from dpverify.spec.symmetric import Symmetry, agent_symmetry, orbit_table
from dpverify.theory.certificates.interval import IntervalCertificate
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.theory.orbits.certificates import (
    OrbitCertificate,
    OrbitProblem,
    average_certificate,
)
from dpverify.theory.orbits.interval import average_interval
from dpverify.verifiers.multiparty.orbit_worst import (
    orbit_worst_certificate,
    orbit_worst_interval,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import proof_summary
from dpverify.verifiers.result import AgentResult, Verdict

METHOD_ORBIT = "orbit"


def orbit_problem(spec: MultipartySpec, agent: AgentSpec) -> tuple[OrbitProblem, Symmetry]:
    """The agent's problem on orbits (a SizeLimitError when it is not symmetric)."""
    symmetry = agent_symmetry(spec, agent)
    if symmetry is None:
        raise SizeLimitError(f"{spec.source}: {agent.name}: the function is not symmetric "
                             "(no orbit method)")
    table = orbit_table(spec, agent, symmetry)
    own = None if agent.party == 0 else symmetry.classes.index((agent.party,))
    return OrbitProblem(symmetry.classes, table.outputs, table.gain_exact, own), symmetry


# With exact lambdas, the exact orbit certificate (which can prove the optimum exactly) is
# built first while its integer work is at most this; beyond it, and whenever the lambdas
# come from epsilon (the exact certificate is a bracket too), the interval certificate
# (arb balls, theory/orbits/interval.py) comes first, and the exact one only when the
# interval bracket cannot decide.
EXACT_ORBIT_WORK = 2_000_000


def exact_orbit_work(symmetry: Symmetry, outputs: int, worst: bool) -> int:
    """A size for the exact route: integer operations of the exact transforms, about
    (orbits) x (sum of class sizes) x (columns transformed), and for the worst case the
    dense float LP on orbits (orbits^2 x outputs)."""
    columns = 2 * outputs + 3
    work = symmetry.orbit_count * sum(n + 1 for n in symmetry.sizes) * columns
    if worst:
        work = max(work, symmetry.orbit_count ** 2 * outputs)
    return work


def interval_orbit_work(symmetry: Symmetry, outputs: int) -> int:
    """A size for the interval route: the transforms by divide and conquer on arb
    polynomials, about (orbits) x (sum of log2(class size)^2) x (columns)."""
    columns = 2 * outputs + 3
    return symmetry.orbit_count * sum(max(1, (n + 1).bit_length()) ** 2
                                      for n in symmetry.sizes) * columns


def orbit_work(symmetry: Symmetry, outputs: int, worst: bool) -> int:
    """The size of the route the orbit method takes first (for the guard,
    --max-orbit-work): the exact transforms while they are small
    (EXACT_ORBIT_WORK), else the interval ones. A worst case whose uniform candidate does
    not close then needs the float LP on orbits, guarded when it is built
    (orbit_worst.py)."""
    exact = exact_orbit_work(symmetry, outputs, worst)
    return exact if exact <= EXACT_ORBIT_WORK else interval_orbit_work(symmetry, outputs)


def class_lambdas(spec: MultipartySpec, classes, tol: float | None = None
                  ) -> tuple[list[Fraction], list[Fraction], bool]:
    """(lower, upper) lambdas of every class, and whether they are exact: the fine brackets
    of e^eps, or (tol given) the coarse ones the verdict needs (theory/exact.py)."""
    if tol is None:
        lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    else:
        lower, upper = coarse_brackets(spec.lambdas_exact, spec.epsilons_exact, tol)
    return ([lower[c[0] - 1] for c in classes], [upper[c[0] - 1] for c in classes],
            lower == upper)


def use_interval(spec: MultipartySpec, symmetry: Symmetry, outputs: int, worst: bool) -> bool:
    """Whether the interval certificate comes first (EXACT_ORBIT_WORK)."""
    return spec.lambdas_exact is None or \
        exact_orbit_work(symmetry, outputs, worst) > EXACT_ORBIT_WORK


def orbit_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                      options: VerifyOptions, *, fine: bool = False) -> OrbitCertificate:
    """The exact orbit certificate of one agent and accuracy, at the coarse brackets of
    e^eps the tolerance allows (or the fine ones)."""
    problem, symmetry = orbit_problem(spec, agent)
    accuracy = Accuracy(accuracy)
    worst = accuracy is Accuracy.WORST
    work = exact_orbit_work(symmetry, len(problem.outputs), worst)
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: too large for the exact orbit certificate: "
            f"{symmetry.orbit_count:,} orbits ({work:.3g} units of exact work); the limit is "
            f"{options.max_orbit_work:.3g} (raise it with --max-orbit-work)")
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
            f"{spec.source}: too large for the orbit method: {symmetry.orbit_count:,} orbits "
            f"({work:.3g} units of work); the limit is {options.max_orbit_work:.3g} (raise "
            "it with --max-orbit-work)")
    lower, upper, _ = class_lambdas(spec, problem.classes)
    if accuracy is Accuracy.AVERAGE:
        return average_interval(agent.name, problem, lower, upper)[0]
    return orbit_worst_interval(agent.name, problem, lower, upper, options)


def decide(cert: dict, checked, tol: Fraction) -> tuple[bool, str]:
    """(optimal?, how): a checked certificate decides `optimal` when it proves the optimum
    or brackets it within the tolerance."""
    value, bound = parse_rational(cert["lower"]["value"]), parse_rational(cert["upper"]["bound"])
    if not checked.ok:
        return False, ""
    if cert["status"] == "proved-optimal":
        return True, "proved"
    if cert["status"] == "bracket" and bound - value <= tol:
        return True, f"bracketed within {float(bound - value):.3g}"
    return False, ""


def verify_orbit_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       options: VerifyOptions) -> AgentResult:
    """One (agent, accuracy) by the orbit method: the interval certificate first where it
    is the cheaper (use_interval), then the exact one at coarse brackets of e^eps, refined
    to the fine ones when those cannot decide; the independent checker confirms each."""
    from dpverify.checker import check_certificate

    start = time.perf_counter()
    problem, symmetry = orbit_problem(spec, agent)
    tol = problem.units.tolerance(options.tol)
    worst = accuracy is Accuracy.WORST
    attempts: list[str] = []
    if use_interval(spec, symmetry, len(problem.outputs), worst):
        attempts.append("interval")
    attempts.append("exact")
    if spec.lambdas_exact is None:
        attempts.append("fine")
    last = None
    for attempt in attempts:
        try:
            if attempt == "interval":
                found: OrbitCertificate | IntervalCertificate = orbit_interval_certificate(
                    spec, agent, accuracy, options)
            else:
                found = orbit_certificate(spec, agent, accuracy, options,
                                          fine=attempt == "fine")
        except SizeLimitError:
            if attempt == "interval":
                continue
            if last is None:
                raise
            break  # the exact certificate is too large: the interval bracket stands
        cert = found.to_json(spec.name)
        checked = check_certificate(spec, cert)
        last = (found, cert, checked)
        if decide(cert, checked, tol)[0] or not checked.ok:
            break
    assert last is not None
    found, cert, checked = last
    return _orbit_result(agent, accuracy, found, cert, checked, tol, start)


def _orbit_result(agent: AgentSpec, accuracy: Accuracy, found, cert: dict, checked,
                  tol: Fraction, start: float) -> AgentResult:
    value, bound = parse_rational(cert["lower"]["value"]), parse_rational(cert["upper"]["bound"])
    proof = proof_summary(cert)
    kind = ("interval orbit certificate (arb balls)"
            if proof.get("arithmetic") == "interval"
            else "exact orbit certificate (python-flint integers)")
    how = f"{kind}, checked independently"
    optimal, decided = decide(cert, checked, tol)
    if not checked.ok:
        verdict, reason = Verdict.ERROR, (f"undecided: the {kind} fails the "
                                          f"independent check ({checked.message})")
    elif optimal and decided == "proved":
        verdict, reason = Verdict.OPTIMAL, f"proved by the {how}"
    elif optimal:
        verdict, reason = Verdict.OPTIMAL, f"{decided} by the {how}"
    else:
        verdict, reason = Verdict.ERROR, (
            f"undecided: the {kind} brackets the optimum in "
            f"[{float(value):.12g}, {float(bound):.12g}], wider than --tol")
    return AgentResult(agent.name, accuracy.value, float(bound), float(value), verdict,
                       time.perf_counter() - start, reason=reason, method=METHOD_ORBIT,
                       extra={"proof": proof})
