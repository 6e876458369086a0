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

from dpverify.defaults import Method
from dpverify.errors import SizeLimitError
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.symmetric import Symmetry, agent_symmetry, orbit_table
from dpverify.theory.certificates.format import PROVED
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.orbits.certificates import (
    OrbitCertificate,
    OrbitProblem,
    average_certificate,
)
from dpverify.theory.units import units_of
from dpverify.verifiers.multiparty.orbit_worst import orbit_worst_certificate
from dpverify.verifiers.multiparty.routes import reduces
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import exact_verdict
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
        return (f"the orbit method needs about {work:.3g} units of exact work "
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
                      options: VerifyOptions) -> OrbitCertificate:
    """The exact orbit certificate of one agent and accuracy (SizeLimitError without a
    symmetry, or beyond the work limit)."""
    accuracy = Accuracy(accuracy)
    problem, symmetry = orbit_problem(spec, agent)
    why = work_limit(spec, agent, symmetry, accuracy, options)
    if why is not None:
        raise SizeLimitError(f"{spec.source}: {agent.name}: {why}")
    lower, upper, exact = class_lambdas(spec, problem.classes)
    if accuracy is not Accuracy.WORST:
        return average_certificate(agent.name, problem, lower, upper, exact)
    return orbit_worst_certificate(agent.name, problem, lower, upper, exact, options)


HOW = "exact orbit certificate (python-flint integers)"


def verify_orbit_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       options: VerifyOptions) -> AgentResult:
    """One (agent, accuracy) by the orbit method: the exact certificate decides, the
    independent checker confirms."""
    start = time.perf_counter()
    found = orbit_certificate(spec, agent, accuracy, options)
    decided = exact_verdict(spec, found, units_of(found.gain).tolerance(options.tol))
    if decided.verdict is Verdict.OPTIMAL:
        what = ("proved" if found.status == PROVED else
                f"bracketed within {float(found.bound - found.value):.3g}")
        reason = f"{what} by the {HOW}, checked independently"
    else:
        reason = f"undecided: the {HOW} {decided.how}"
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
                    hint: AgentResult | None, options: VerifyOptions) -> OrbitCertificate:
        return orbit_certificate(spec, agent, accuracy, options)


ORBIT = OrbitRoute()
