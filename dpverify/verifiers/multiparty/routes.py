"""The methods of a multi-party problem on bits as objects, and the one choice among them
(docs/theory.md, "Methods").

Each method (`lp`: corner_lp.LP; `orbit`: orbit.ORBIT; `proof`: certify.PROOF) says
whether it fits an agent and accuracy (`fits`: None, or the reason it does not, naming its
limit) and verifies it (`verify`); the two exact ones also build their certificate
(`certificate`). `choose` is the one place that picks among them, by iterating over a
sequence of methods in order of preference: `verify` passes every method
(methods.py, `verify_routes`), `certify` and the exact settling of the LP's verdicts the
two that make certificates (certify.py, `certificate_routes`), so that both take the same
method for the same agent. The sequences live beside the objects they name (this module
is below them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from dpverify.defaults import Method
from dpverify.errors import SizeLimitError
from dpverify.policy import ALL_INPUTS_PARTIES
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.symmetric import Symmetry, agent_symmetry
from dpverify.theory.certificates.format import Certificate
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import AgentResult

__all__ = ["ALL_INPUTS_PARTIES", "CertificateRoute", "Route", "choose", "fitting", "reduces",
           "wanted"]


class Route(Protocol):
    """A method of verifying one agent and accuracy of a multi-party problem on bits."""

    method: Method

    def fits(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             options: VerifyOptions) -> str | None:
        """None when this method can take the agent and accuracy, else why not (with the
        limit and the option that raises it)."""
        ...

    def verify(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
               options: VerifyOptions) -> AgentResult:
        ...


class CertificateRoute(Route, Protocol):
    """A method whose verdict rests on an exact certificate, which it also builds for
    `certify` and for settling the LP's verdicts."""

    def certificate(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                    hint: AgentResult | None, options: VerifyOptions, *, fine: bool = True
                    ) -> Certificate:
        """The certificate (typed; SizeLimitError or SolverError when there is none);
        `hint` a float result of the LP route, whose rule and prior may serve as hints;
        at the fine brackets of e^eps, or (not `fine`) the coarse ones the tolerance
        allows."""
        ...


R = TypeVar("R", bound=Route)


def reduces(spec: MultipartySpec, agent: AgentSpec) -> Symmetry | None:
    """The agent's symmetry when it reduces the problem (fewer orbits than inputs)."""
    symmetry = agent_symmetry(spec, agent)
    if symmetry is None or symmetry.orbit_count >= 2 ** min(spec.parties, 62):
        return None
    return symmetry


def wanted(routes: Sequence[R], options: VerifyOptions) -> list[R]:
    """The routes `--method` allows, in order: all of them for `auto` (and for `lp` when
    the routes are certificates, which the LP does not make), else the one named."""
    named = [r for r in routes if r.method == options.method]
    return named if named else list(routes)


def choose(routes: Sequence[R], spec: MultipartySpec, agent: AgentSpec,
           accuracy: Accuracy, options: VerifyOptions) -> tuple[R, str]:
    """The first route (in order) that fits, and why the ones before it did not ("" when
    it is the first); SizeLimitError, naming every limit, when none fits."""
    chosen = fitting(routes, spec, agent, accuracy, options)
    return chosen[0]


def fitting(routes: Sequence[R], spec: MultipartySpec, agent: AgentSpec,
            accuracy: Accuracy, options: VerifyOptions) -> list[tuple[R, str]]:
    """Every route that fits, in order, each with why the routes before it did not fit
    ("" for none); SizeLimitError, naming every limit, when none fits. The first is the
    choice (`choose`), the others what `auto` falls back on when it does not close."""
    out: list[tuple[R, str]] = []
    refusals: list[tuple[R, str]] = []
    for route in routes:
        why = route.fits(spec, agent, accuracy, options)
        if why is None:
            out.append((route, "; ".join(w for _, w in refusals)))
        else:
            refusals.append((route, why))
    if not out:
        if len(refusals) == 1:
            raise SizeLimitError(f"{spec.source}: {agent.name}: {refusals[0][1]}")
        raise SizeLimitError(f"{spec.source}: {agent.name}: no method fits: " + "; ".join(
            f"{route.method}: {why}" for route, why in refusals))
    return out
