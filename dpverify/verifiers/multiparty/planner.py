"""The planner of a multi-party problem on bits: which routes verify an agent and
accuracy, in what order, and the one loop that runs them (docs/theory.md, "Methods";
docs/architecture.md walks one `verify` through it).

For each agent and accuracy (reductions.AgentProblem: the gains in their units, the
GainUnits reduction; the orbit route adds the Symmetry reduction):

1. **The order** (`verify_routes`): `--method auto` (the default) takes the fastest sound
   route first: an exact certificate of RR's optimality, checked independently, wherever
   one fits (KOV's Theorem 3.1 says it closes): on all 2^k inputs (`proof`,
   all_inputs.PROOF) while they can be tabulated, or on the orbits of a symmetry
   (`orbit`, orbit.ORBIT), which goes first beyond policy.ALL_INPUTS_PARTIES parties
   (`certificate_routes`); then the corner LP against RR's decision LPs (`lp`,
   corner_lp.LP). With interior points (--grid, --samples) the LP goes first, since they
   are checked on it. `--method lp|orbit|proof` takes that route alone (routes.wanted).
2. **The plan** (`plan`): the first route that fits, with why the ones before it did not
   (routes.choose: a problem is refused only when none fits, every limit named), and the
   routes after it; with `--cross-check`, a second route of the other kind. The routes
   are `routes.Lazy` references: a route's code is imported when it is first asked
   whether it fits, so a run imports the routes it reaches and no other.
3. **The loop** (`verify_agent`): each route runs in turn with the hints of the ones
   before it (hints.py) until one decides (a verdict other than `error`), asking the
   routes after the first whether they fit only when it comes to them (routes.in_turn);
   the reason names the routes passed over and why. The LP route settles what its floats
   cannot decide by the certificate makers the planner hands it (`Hints.makers`, in the
   order of `certificate_routes`; settle.py), sharing every float LP already solved.

`certify` (`certificate_for`) and the exact settling take the certificate makers in the
same order, so they take the same method for the same agent. `--cross-check` verifies
each agent by an exact route and by the LP (whichever of the two was not chosen) and
compares them: the same verdict and both values within --tol, or the verdict is `error`,
with both routes' values in the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import chain
from typing import TYPE_CHECKING

from dpverify.defaults import Method
from dpverify.policy import ALL_INPUTS_PARTIES
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.multiparty.routes import (
    ExactRoute,
    Lazy,
    Route,
    choose,
    in_turn,
    wanted,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.result import (
    AgentResult,
    Attempt,
    CrossCheck,
    ProblemResult,
    Proof,
    Verdict,
)

if TYPE_CHECKING:
    from dpverify.theory.certificates.format import Certificate
    from dpverify.verifiers.multiparty.memo import Hints

__all__ = ["LP", "ORBIT", "PROOF", "Plan", "certificate_for", "certificate_routes",
           "choose_method", "plan", "proof_for", "verify_by_lp", "verify_problem",
           "verify_routes"]


# The routes (routes.py), imported when first asked: the proof on all inputs, the orbit
# method, the corner LP.
PROOF = Lazy(Method.PROOF, "dpverify.verifiers.multiparty.all_inputs", "PROOF")
ORBIT = Lazy(Method.ORBIT, "dpverify.verifiers.multiparty.orbit", "ORBIT")
LP = Lazy(Method.LP, "dpverify.verifiers.multiparty.corner_lp", "LP")


def certificate_routes(spec: MultipartySpec) -> tuple[ExactRoute, ...]:
    """The routes that certify, in order of preference: the certificate on all inputs,
    then on orbits; beyond policy.ALL_INPUTS_PARTIES parties the orbit certificate first,
    for a problem its symmetry reduces (the orbit method does not fit one it does not):
    it takes the same 0.6 s at any k, where the certificate on all 2^k inputs of a
    majority and a party's `sum` under -abs takes 1.2 s at k = 8, 4 s at k = 10, 29 s at
    k = 12 (benchmarks/bench_orbits.py). `verify`, `certify` and the exact settling all
    choose in this order, so they take the same method for the same agent."""
    return (ORBIT, PROOF) if spec.parties > ALL_INPUTS_PARTIES else (PROOF, ORBIT)


def verify_routes(spec: MultipartySpec, options: VerifyOptions) -> list[Route]:
    """The routes `verify` may take, in order of preference (module docstring): the exact
    ones in the order that certifies, then the LP; the LP first with interior points."""
    exact: tuple[Route, ...] = certificate_routes(spec)
    interior = options.grid >= 2 or options.samples > 0
    return wanted((LP, *exact) if interior else (*exact, LP), options.method)


def hints_for(problem: AgentProblem) -> Hints:
    """Fresh hints of one agent and accuracy: the certificate makers `--method` allows,
    in the order that certifies (what the exact settling and --certify take)."""
    from dpverify.verifiers.multiparty.memo import Hints

    makers = wanted(certificate_routes(problem.spec), problem.options.method)
    return Hints(makers=tuple(makers))


def choose_method(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  options: VerifyOptions) -> tuple[Method, str]:
    """(the method `verify` takes for this agent and accuracy, why the routes before it
    did not fit); SizeLimitError when none fits."""
    problem = AgentProblem(spec, agent, accuracy, options)
    route, why = choose(verify_routes(spec, options), problem)
    return route.method, why


@record
class Plan:
    """How one agent and accuracy is verified: the first route that fits (with why the
    routes before it did not fit), the routes after it (asked whether they fit when the
    loop comes to them; none with --cross-check), and the second route of --cross-check."""

    problem: AgentProblem
    first: tuple[Route, str]
    later: tuple[Route, ...] = ()
    cross: Route | None = None


def plan(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
         options: VerifyOptions) -> Plan:
    """The plan (SizeLimitError, before any work, when no route fits; with --cross-check,
    when the second route does not fit)."""
    problem = AgentProblem(spec, agent, accuracy, options)
    order = verify_routes(spec, options)
    first, why = choose(order, problem)
    if not options.cross_check:
        return Plan(problem, (first, why), tuple(order[order.index(first) + 1:]))
    second: Sequence[Route] = [LP] if first is not LP else list(certificate_routes(spec))
    other, _ = choose(second, problem)
    return Plan(problem, (first, why), cross=other)


def verify_agent(chosen: Plan) -> AgentResult:
    """The one loop: the first route that decides (a verdict other than `error`), trying
    the next route that fits when one does not, each with the hints of those before it;
    the reason names the routes passed over and why."""
    problem = chosen.problem
    spec, agent, accuracy = problem.spec, problem.agent, problem.accuracy
    hints = hints_for(problem)
    passed: list[str] = []
    attempts: list[Attempt] = []
    result: AgentResult | None = None
    first_why = chosen.first[1]
    for route, why in chain([chosen.first], in_turn(chosen.later, problem, first_why)):
        stage(spec.name, agent.name, accuracy.value, route.method)
        outcome = route.run(problem, hints)
        hints, result = outcome.hints, outcome.result
        attempts.append(Attempt(route.method, result.verdict, result.code))
        before = "; ".join(x for x in (why, *passed) if x)
        if before:
            result = replace(result, reason="; ".join(
                r for r in (f"{before}: method {route.method}", result.reason) if r),
                code=result.code or ReasonCode.NOTE)
        if outcome.decided:
            break
        passed.append(f"method {route.method} did not decide ({result.reason})")
    assert result is not None  # the plan has a first route
    return replace(result, attempts=tuple(attempts)) if len(attempts) > 1 else result


def cross_check(chosen: Plan, first: AgentResult) -> AgentResult:
    """`first` with the second route's numbers (`cross_check`) and, when the two disagree
    (another verdict, or a value farther than --tol), the verdict `error`. The second
    route runs with hints of its own: an independent computation."""
    problem, other = chosen.problem, chosen.cross
    assert other is not None
    stage(problem.spec.name, problem.agent.name, problem.accuracy.value,
          f"{other.method} (cross-check)")
    second = other.run(problem, hints_for(problem)).result
    tol = float(problem.tol)

    def close(a: float | None, b: float | None) -> bool:
        return a is not None and b is not None and abs(a - b) <= tol

    agrees = first.verdict is second.verdict and close(
        first.bound, second.bound) and close(first.rr_value, second.rr_value)
    check = CrossCheck(second.method, second.bound, second.rr_value,
                       second.verdict, agrees)

    def values(r: AgentResult) -> str:
        return (f"method {r.method}: relaxed optimum {_shown(r.bound)}, RR value "
                f"{_shown(r.rr_value)} ({r.verdict.value})")

    seconds = first.seconds + second.seconds
    if agrees:
        note = f"cross-check: {values(second)} agrees"
        return replace(first, cross_check=check, seconds=seconds,
                       reason="; ".join(r for r in (first.reason, note) if r),
                       code=first.code or ReasonCode.NOTE)
    note = (f"cross-check: the routes disagree: {values(first)}; {values(second)}"
            + (f" ({second.reason})" if second.reason else ""))
    return replace(first, verdict=Verdict.ERROR, cross_check=check, seconds=seconds,
                   reason="; ".join(r for r in (note, first.reason) if r),
                   code=ReasonCode.CROSS_CHECK_DISAGREES)


def _shown(v: float | None) -> str:
    return "none" if v is None else f"{v:.12g}"


def verify_problem(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    """Every agent and accuracy of a multi-party problem on bits, each by its plan;
    refused (SizeLimitError) before any work when one of them fits no method."""
    plans = [plan(spec, agent, accuracy, options)
             for agent in spec.agents for accuracy in spec.accuracies]
    results = []
    for chosen in plans:
        result = verify_agent(chosen)
        if chosen.cross is not None:
            result = cross_check(chosen, result)
        results.append(result)
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), spec.header(),
                         setting=spec.setting)


def certificate_for(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                    agent_result: AgentResult | None = None,
                    options: VerifyOptions | None = None, *, fine: bool = True
                    ) -> Certificate:
    """The exact certificate (typed) of one agent and accuracy of a problem on bits: the
    first of `certificate_routes` that fits (`--method proof|orbit` asks for one; `auto`
    takes the first that fits, and the next when its exact certificate is over a limit;
    settle.certificate_of), with the verifier's float result `agent_result` as hints. At
    the fine brackets of e^eps (64 bits), or (not `fine`) the coarse ones the tolerance
    allows (theory/exact.py). SizeLimitError (a limit) or SolverError (a failed LP) when
    there is none. (Other settings: verifiers/certifiers.py.)"""
    from dpverify.verifiers.multiparty.settle import certificate_of

    problem = AgentProblem(spec, agent, Accuracy(accuracy), options or VerifyOptions())
    return certificate_of(problem, hints_for(problem).with_lp(agent_result), fine=fine)


def proof_for(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
              agent_result: AgentResult | None = None,
              options: VerifyOptions | None = None) -> Proof:
    """`verify --certify`: the proof of one result, never raising for a limit or a solver
    failure (those give `unproved` with the reason)."""
    from dpverify.verifiers.multiparty.settle import proof_for as settled_proof

    problem = AgentProblem(spec, agent, Accuracy(accuracy), options or VerifyOptions())
    return settled_proof(problem, hints_for(problem).with_lp(agent_result))


def verify_by_lp(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                 options: VerifyOptions) -> AgentResult:
    """One agent and accuracy by the method `lp` alone (the corner LP, settled exactly by
    the certificate makers): what the protocol audit and falsify compare with."""
    from dpverify.verifiers.multiparty.corner_lp import lp_result

    problem = AgentProblem(spec, agent, Accuracy(accuracy), options)
    return lp_result(problem, hints_for(problem))
