"""Which method verifies an agent of a problem on bits (docs/theory.md, "Methods"), and
the cross-check of two of them.

`--method auto` (the default) takes the fastest sound route: an exact certificate of RR's
optimality, checked independently, wherever one fits (KOV's Theorem 3.1 says it closes):
on all 2^k inputs (`proof`, certify.PROOF) while they can be tabulated, or on the orbits
of a symmetry (`orbit`, orbit.ORBIT), which goes first beyond ALL_INPUTS_PARTIES parties
(certify.certificate_routes); and the corner LP against RR's decision LPs (`lp`,
corner_lp.LP) only when neither fits, or closes (a verdict `error`: the next route that
fits is tried, and the reason says why). With interior points (--grid, --samples) the LP
goes first, since they are checked on it. `--method lp|orbit|proof` takes that route
alone. The choice is routes.choose over these routes in this order, as for `certify` and
the exact settling (certify.certificate_for), so both take the same method for the same
agent. A problem is refused only when no route fits, with the limits named.

`--cross-check` verifies each agent by an exact route and by the LP (whichever of the two
was not chosen) and compares them: the same verdict and both values within --tol, or the
verdict is `error`, with both routes' values in the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from dpverify.defaults import Method
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.units import units_of
from dpverify.verifiers.multiparty.certify import certificate_routes
from dpverify.verifiers.multiparty.corner_lp import LP
from dpverify.verifiers.multiparty.routes import Route, choose, fitting, wanted
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.result import AgentResult, CrossCheck, ProblemResult, Verdict


def verify_routes(spec: MultipartySpec, options: VerifyOptions) -> list[Route]:
    """The routes `verify` may take, in order of preference (module docstring): the exact
    ones in the order that certifies (certify.certificate_routes), then the LP; the LP
    first with interior points."""
    exact: tuple[Route, ...] = certificate_routes(spec)
    interior = options.grid >= 2 or options.samples > 0
    return wanted((LP, *exact) if interior else (*exact, LP), options)


def choose_method(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  options: VerifyOptions) -> tuple[Method, str]:
    """(the method `verify` takes for this agent and accuracy, why the routes before it
    did not fit); SizeLimitError when none fits."""
    route, why = choose(verify_routes(spec, options), spec, agent, accuracy, options)
    return route.method, why


@dataclass(frozen=True)
class Plan:
    """How one agent and accuracy is verified: the routes that fit, in order (each with why
    the routes before it did not fit), and the second route of --cross-check."""

    routes: tuple[tuple[Route, str], ...]
    cross: Route | None = None


def plan(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
         options: VerifyOptions) -> Plan:
    """The plan (SizeLimitError, before any work, when no route fits; with --cross-check,
    when the second route does not fit)."""
    routes = tuple(fitting(verify_routes(spec, options), spec, agent, accuracy, options))
    if not options.cross_check:
        return Plan(routes)
    first = routes[0][0]
    second = [LP] if first is not LP else list(certificate_routes(spec))
    other, _ = choose(second, spec, agent, accuracy, options)
    return Plan(routes[:1], other)


def verify_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 options: VerifyOptions, routes: Sequence[tuple[Route, str]]) -> AgentResult:
    """The first route that decides (a verdict other than `error`), trying the next route
    that fits when one does not; the reason names the routes passed over and why."""
    passed: list[str] = []
    result: AgentResult | None = None
    for index, (route, why) in enumerate(routes):
        stage(spec.name, agent.name, accuracy.value, route.method)
        result = route.verify(spec, agent, accuracy, options)
        before = "; ".join(x for x in (why, *passed) if x)
        if before:
            result = replace(result, reason="; ".join(
                r for r in (f"{before}: method {route.method}", result.reason) if r))
        if result.verdict is not Verdict.ERROR or index == len(routes) - 1:
            break
        passed.append(f"method {route.method} did not decide ({result.reason})")
    assert result is not None  # fitting() returns at least one route
    return result


def cross_check(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                options: VerifyOptions, first: AgentResult, other: Route) -> AgentResult:
    """`first` with the second route's numbers (`cross_check`) and, when the two disagree
    (another verdict, or a value farther than --tol), the verdict `error`."""
    stage(spec.name, agent.name, accuracy.value, f"{other.method} (cross-check)")
    second = other.verify(spec, agent, accuracy, options)
    tol = float(units_of(tabulate(spec, agent).gain_exact).tolerance(options.tol))

    def close(a: float | None, b: float | None) -> bool:
        return a is not None and b is not None and abs(a - b) <= tol

    agrees = first.verdict is second.verdict and close(
        first.relaxed_optimum, second.relaxed_optimum) and close(first.rr_value, second.rr_value)
    check = CrossCheck(second.method, second.relaxed_optimum, second.rr_value,
                       second.verdict, agrees)

    def values(r: AgentResult) -> str:
        return (f"method {r.method}: relaxed optimum {_shown(r.relaxed_optimum)}, RR value "
                f"{_shown(r.rr_value)} ({r.verdict.value})")

    seconds = first.seconds + second.seconds
    if agrees:
        note = f"cross-check: {values(second)} agrees"
        return replace(first, cross_check=check, seconds=seconds,
                       reason="; ".join(r for r in (first.reason, note) if r))
    note = (f"cross-check: the routes disagree: {values(first)}; {values(second)}"
            + (f" ({second.reason})" if second.reason else ""))
    return replace(first, verdict=Verdict.ERROR, cross_check=check, seconds=seconds,
                   reason="; ".join(r for r in (note, first.reason) if r))


def _shown(v: float | None) -> str:
    return "none" if v is None else f"{v:.12g}"


def verify_problem(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    """Every agent and accuracy of a multi-party problem, each by its method; refused
    (SizeLimitError) before any work when one of them fits no method."""
    plans = [(agent, accuracy, plan(spec, agent, accuracy, options))
             for agent in spec.agents for accuracy in spec.accuracies]
    results = []
    for agent, accuracy, chosen in plans:
        result = verify_agent(spec, agent, accuracy, options, chosen.routes)
        if chosen.cross is not None:
            result = cross_check(spec, agent, accuracy, options, result, chosen.cross)
        results.append(result)
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), spec.header(),
                         setting=spec.setting)
