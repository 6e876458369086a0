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
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.orbits.certificates import (
    OrbitCertificate,
    OrbitProblem,
    average_certificate,
)
from dpverify.theory.units import units_of
from dpverify.verifiers.multiparty.orbit_worst import orbit_worst_certificate
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


def orbit_work(symmetry: Symmetry, outputs: int, worst: bool) -> int:
    """A size for the guard: integer operations of the exact transforms, about
    (orbits) x (sum of class sizes) x (columns transformed)."""
    columns = 2 * outputs + 3
    work = symmetry.orbit_count * sum(n + 1 for n in symmetry.sizes) * columns
    if worst:  # the float LP on orbits: a dense (orbits x orbits x outputs) matrix
        work = max(work, symmetry.orbit_count ** 2 * outputs)
    return work


def class_lambdas(spec: MultipartySpec, classes) -> tuple[list[Fraction], list[Fraction], bool]:
    """(lower, upper) lambdas of every class, and whether they are exact."""
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    return ([lower[c[0] - 1] for c in classes], [upper[c[0] - 1] for c in classes],
            lower == upper)


def orbit_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                      options: VerifyOptions) -> OrbitCertificate:
    """The exact orbit certificate of one agent and accuracy."""
    problem, symmetry = orbit_problem(spec, agent)
    accuracy = Accuracy(accuracy)
    worst = accuracy is Accuracy.WORST
    work = orbit_work(symmetry, len(problem.outputs), worst)
    if work > options.max_orbit_work:
        raise SizeLimitError(
            f"{spec.source}: too large for the orbit method: {symmetry.orbit_count:,} orbits "
            f"({work:.3g} units of exact work); the limit is {options.max_orbit_work:.3g} "
            "(raise it with --max-orbit-work)")
    lower, upper, exact = class_lambdas(spec, problem.classes)
    if not worst:
        return average_certificate(agent.name, problem, lower, upper, exact)
    return orbit_worst_certificate(agent.name, problem, lower, upper, exact, options)


def verify_orbit_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       options: VerifyOptions) -> AgentResult:
    """One (agent, accuracy) by the orbit method: the exact certificate decides, the
    independent checker confirms."""
    from dpverify.checker import check_certificate

    start = time.perf_counter()
    found = orbit_certificate(spec, agent, accuracy, options)
    cert = found.to_json(spec.name)
    value, bound = parse_rational(cert["lower"]["value"]), parse_rational(cert["upper"]["bound"])
    checked = check_certificate(spec, cert)
    tol = units_of(found.gain).tolerance(options.tol)
    proof = proof_summary(cert)
    how = "exact orbit certificate (python-flint integers), checked independently"
    if not checked.ok:
        verdict, reason = Verdict.ERROR, (f"undecided: the {how.split(',')[0]} fails the "
                                          f"independent check ({checked.message})")
    elif cert["status"] == "proved-optimal":
        verdict, reason = Verdict.OPTIMAL, f"proved by the {how}"
    elif cert["status"] == "bracket" and bound - value <= tol:
        verdict, reason = Verdict.OPTIMAL, (f"bracketed within {float(bound - value):.3g} "
                                            f"by the {how}")
    else:
        verdict, reason = Verdict.ERROR, (
            f"undecided: the {how.split(',')[0]} brackets the optimum in "
            f"[{float(value):.12g}, {float(bound):.12g}], wider than --tol")
    return AgentResult(agent.name, accuracy.value, float(bound), float(value), verdict,
                       time.perf_counter() - start, reason=reason, method=METHOD_ORBIT,
                       extra={"proof": proof})
