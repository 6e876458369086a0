"""The pieces the planner (planner.py) puts together for one agent and accuracy of a
multi-party problem on bits (docs/theory.md, "Methods"): the routes, the certificate
makers, and what one hands to the next.

* A **route** (`Route`: the LP route corner_lp.LP, the orbit route orbit.ORBIT, the
  all-input proof all_inputs.PROOF) says whether it fits the problem (`fits`: None, or the
  reason it does not, naming its limit and the option that raises it) and runs
  (`run(problem, hints)`): an `Outcome`, decided (a verdict other than `error`) or not,
  with the hints it learned for the routes after it. No route calls another.
* A **certificate maker** (`CertificateMaker`: the two exact routes) builds its exact
  certificate (`exact`, at the fine or the coarse brackets of e^eps) and, where exact
  rationals are the cost, its interval one first (`interval`); `decided` tries them
  cheapest first and checks each independently. The exact settling of the LP's verdicts
  (settle.py) and `certify` (planner.certificate_for) use the makers the planner gives.
* **Hints** (hints.py) carry what one route learned (the LP's float solution, RR's float
  worst-case LPs, the orbit LP's rationalised solution) so that no LP is solved twice.

`fitting` is the one place that checks which routes fit, `wanted` the one that reads
`--method`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from dpverify.defaults import Method
from dpverify.errors import SizeLimitError
from dpverify.records import record
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.proof import AnyCertificate, ExactVerdict, first_deciding
from dpverify.verifiers.result import AgentResult, Verdict

if TYPE_CHECKING:
    from dpverify.theory.certificates.format import Certificate
    from dpverify.theory.certificates.interval import IntervalCertificate
    from dpverify.verifiers.multiparty.hints import Hints

__all__ = ["CertificateMaker", "ExactRoute", "Lazy", "Outcome", "Route", "choose", "decided",
           "first_fitting", "fitting", "in_turn", "wanted"]


@record
class Outcome:
    """What a route gives back: its result for the agent and accuracy, and the hints for
    the routes after it. `decided`: a verdict other than `error`."""

    result: AgentResult
    hints: Hints

    @property
    def decided(self) -> bool:
        return self.result.verdict is not Verdict.ERROR


class Route(Protocol):
    """A method of verifying one agent and accuracy of a multi-party problem on bits."""

    @property
    def method(self) -> Method:
        ...

    def fits(self, problem: AgentProblem) -> str | None:
        """None when this method can take the agent and accuracy, else why not (with the
        limit and the option that raises it)."""
        ...

    def run(self, problem: AgentProblem, hints: Hints) -> Outcome:
        ...


class CertificateMaker(Protocol):
    """A route whose verdict rests on an exact certificate, which it also builds for
    `certify` and for settling the LP's verdicts."""

    @property
    def method(self) -> Method:
        ...

    def fits(self, problem: AgentProblem) -> str | None:
        ...

    def use_interval(self, problem: AgentProblem) -> bool:
        """Whether `verify` builds the interval certificate first (exact rationals are
        the cost)."""
        ...

    def interval(self, problem: AgentProblem, hints: Hints) -> IntervalCertificate:
        """The certificate's bracket in outward-rounded arithmetic."""
        ...

    def exact(self, problem: AgentProblem, hints: Hints, *, fine: bool = True,
              quick: bool = False) -> Certificate:
        """The exact certificate (SizeLimitError or SolverError when there is none), at
        the fine brackets of e^eps, or (not `fine`) the coarse ones the tolerance allows;
        `hints.lp`, the LP route's float result, may serve as hints. `quick`: `verify`'s
        attempt (`decided`, also when it settles the LP's verdicts), which may keep a
        checked bracket within --tol where proving the optimum would take long; `certify`
        proves."""
        ...


class ExactRoute(Route, CertificateMaker, Protocol):
    """A route that is also a certificate maker (the proof and the orbit route)."""


@record
class Lazy:
    """A route (and certificate maker) named by its module and name: the module is imported
    when the route is first asked something (`fits`, `run`, a certificate), so that a run
    imports the code of the routes it reaches and no other (issue 25, start-up: every
    route's code is a quarter of a small verification's imports)."""

    method: Method
    module: str
    name: str

    @property
    def route(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def fits(self, problem: AgentProblem) -> str | None:
        return self.route.fits(problem)  # type: ignore[no-any-return]

    def run(self, problem: AgentProblem, hints: Hints) -> Outcome:
        return self.route.run(problem, hints)  # type: ignore[no-any-return]

    def use_interval(self, problem: AgentProblem) -> bool:
        return self.route.use_interval(problem)  # type: ignore[no-any-return]

    def interval(self, problem: AgentProblem, hints: Hints) -> IntervalCertificate:
        return self.route.interval(problem, hints)  # type: ignore[no-any-return]

    def exact(self, problem: AgentProblem, hints: Hints, *, fine: bool = True,
              quick: bool = False) -> Certificate:
        return self.route.exact(  # type: ignore[no-any-return]
            problem, hints, fine=fine, quick=quick)


def decided(maker: CertificateMaker, problem: AgentProblem, hints: Hints
            ) -> tuple[AnyCertificate, ExactVerdict]:
    """`verify`'s certificate and what it decides, cheapest first (proof.first_deciding):
    where exact rationals are the cost (`use_interval`), the interval certificate
    (outward-rounded floats), then the exact one at the coarse brackets of e^eps the
    tolerance allows (lambdas from epsilon); then (always) the exact one at the fine
    brackets. A small problem gets the exact certificate at once, `quick` (a checked
    bracket within --tol may stand where the exact proof would take long); `certify`
    keeps exact certificates."""
    def exact(fine: bool) -> Callable[[], AnyCertificate]:
        return lambda: maker.exact(problem, hints, fine=fine, quick=True)

    attempts: list[tuple[bool, Callable[[], AnyCertificate]]] = []
    if maker.use_interval(problem):
        attempts.append((True, lambda: maker.interval(problem, hints)))
        if problem.spec.lambdas_exact is None:
            attempts.append((False, exact(False)))
    attempts.append((False, exact(True)))
    return first_deciding(problem.spec, attempts, problem.tol)


R = TypeVar("R", bound=Route | CertificateMaker)
T = TypeVar("T")


def wanted(routes: Sequence[R], method: Method) -> list[R]:
    """The routes `--method` allows, in order: all of them for `auto`; the one it names
    when it is among them; all of them, in `auto`'s order, for `lp` among the certificate
    makers (the corner LP makes no certificate: `certify` notes it, runner/notes.py). A
    method that none of the routes is, and that is not `lp`, is refused (ValueError: the
    options allow only the four of defaults.SELECTABLE)."""
    if method is Method.AUTO:
        return list(routes)
    named = [r for r in routes if r.method is method]
    if named:
        return named
    if method is Method.LP:
        return list(routes)
    raise ValueError(f"no route is the method {method!r}")


def in_turn(routes: Sequence[R], problem: AgentProblem, before: str = ""
            ) -> Iterator[tuple[R, str]]:
    """The routes that fit, in order, each with why the routes before it did not (after
    `before`, the refusals ahead of `routes`): a route is asked whether it fits only when
    the ones before it have been taken or passed over (a Lazy route's code is imported
    then)."""
    refusals = [before] if before else []
    for route in routes:
        why = route.fits(problem)
        if why is None:
            yield route, "; ".join(refusals)
        else:
            refusals.append(why)


def fitting(routes: Sequence[R], problem: AgentProblem) -> list[tuple[R, str]]:
    """Every route that fits, in order, each with why the routes before it did not fit
    ("" for none); SizeLimitError, naming every limit, when none fits. The first is the
    choice (`choose`), the others what `auto` falls back on when it does not close."""
    out = list(in_turn(routes, problem))
    if not out:
        refused(routes, problem)
    return out


def refused(routes: Sequence[R], problem: AgentProblem) -> NoReturn:
    """SizeLimitError naming every route's limit (none of `routes` fits)."""
    refusals = [(route, route.fits(problem)) for route in routes]
    spec, agent = problem.spec, problem.agent
    if len(refusals) == 1:
        raise SizeLimitError(f"{spec.source}: {agent.name}: {refusals[0][1]}")
    raise SizeLimitError(f"{spec.source}: {agent.name}: no method fits: " + "; ".join(
        f"{route.method}: {why}" for route, why in refusals))


def choose(routes: Sequence[R], problem: AgentProblem) -> tuple[R, str]:
    """The first route (in order) that fits, and why the ones before it did not ("" when
    it is the first); SizeLimitError, naming every limit, when none fits. Only the routes
    up to the choice are asked whether they fit."""
    for found in in_turn(routes, problem):
        return found
    refused(routes, problem)


def first_fitting(makers: Sequence[tuple[R, str]], build: Callable[[R], T],
                  on_start: Callable[[R], None] | None = None) -> T:
    """`build(maker)` for the first maker, the next when its certificate is over a limit
    (SizeLimitError), and the last one's SizeLimitError when every one is: the one loop of
    `certify` and the exact settling."""
    for i, (maker, _) in enumerate(makers):
        if on_start is not None:
            on_start(maker)
        try:
            return build(maker)
        except SizeLimitError:
            if i == len(makers) - 1:
                raise
    raise AssertionError("fitting returns at least one route")
