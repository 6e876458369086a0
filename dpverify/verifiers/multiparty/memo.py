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

Its own module (issue 25, point 5: start-up), so that an average case, which needs the
memo, does not import the worst case's hints and their LP (hints.py, theory/worst_lp.py,
lp/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from dpverify.errors import DpverifyError
from dpverify.records import record

if TYPE_CHECKING:
    from dpverify.verifiers.multiparty.routes import CertificateMaker
    from dpverify.verifiers.result import AgentResult

__all__ = ["Hints"]

T = TypeVar("T")


@record(eq=False)
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
