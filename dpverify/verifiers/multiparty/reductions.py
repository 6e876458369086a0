"""One agent and accuracy of a multi-party problem on bits, as the planner (planner.py)
and the routes see it, and the reductions it goes through before a route solves it.

cvxpy's solving chain is the model: a reduction says whether it `accepts` a problem
(None, or why not), `apply` maps the problem to a smaller or better-scaled one, `invert`
maps what was found there back. Two reductions, each written once:

* `GainUnits` (theory/units.py): the gains normalised to [0, 1], w = lo + span w', so
  that no decision depends on the scale of the gains (the tolerance is relative to their
  range); every route solves on the unit gains and inverts its values to the user's.
  It accepts every problem.
* `Symmetry` (spec/symmetric.py, theory/orbits/): parties interchangeable inside classes
  leave every LP of the verifier invariant, so it has an optimal solution constant on
  orbits (convexity: average any optimal solution over the group; KOV 2015, Theorem 3.1
  holds on orbits). It accepts a problem whose symmetry reduces it (fewer orbits than
  inputs); `apply` gives the problem on orbits; `invert` is the identity on values (the
  optimum on orbits is the optimum). The orbit route (orbit.py) needs it.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

from dpverify.errors import SizeLimitError
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec, AgentTable, MultipartySpec
from dpverify.spec.symmetric import Symmetry as Classes
from dpverify.spec.symmetric import agent_symmetry, orbit_table
from dpverify.spec.tables import MAX_TABULATED_PARTIES, tabulate
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.options import VerifyOptions

if TYPE_CHECKING:
    from dpverify.theory.orbits.certificates import OrbitProblem

__all__ = ["GAIN_UNITS", "SYMMETRY", "AgentProblem", "GainUnits", "Symmetry", "reduces"]


@record(eq=False)
class AgentProblem:
    """One agent and accuracy of a multi-party problem on bits, with the options of the
    run: what every route and certificate maker takes. Its gain table and units are
    computed once (and cached beside the spec by spec/tables.py)."""

    spec: MultipartySpec
    agent: AgentSpec
    accuracy: Accuracy
    options: VerifyOptions

    @property
    def worst(self) -> bool:
        return self.accuracy is Accuracy.WORST

    @property
    def table(self) -> AgentTable:
        return tabulate(self.spec, self.agent)

    @functools.cached_property
    def units(self) -> Units:
        """The gains' units (the GainUnits reduction)."""
        return GAIN_UNITS.apply(self)

    @functools.cached_property
    def tol(self) -> Fraction:
        """The verdict tolerance in the user's units (relative to the gains' range): from
        the units of the table on orbits where a symmetry reduces the problem (the same
        rows as on all inputs, so the same range), not tabulating every input for it (at
        20 parties that took 3 of a symmetric member's 4 s)."""
        symmetry = reduces(self.spec, self.agent)
        if symmetry is None or "units" in self.__dict__:  # (or the units are at hand)
            return self.units.tolerance(self.options.tol)
        orbits = units_of(orbit_table(self.spec, self.agent, symmetry).gain_exact)
        return orbits.tolerance(self.options.tol)

    def with_options(self, options: VerifyOptions) -> AgentProblem:
        """The same agent and accuracy under other options (a route's larger budget)."""
        return replace(self, options=options)


class GainUnits:
    """The gains normalised to [0, 1] (module docstring)."""

    def accepts(self, problem: AgentProblem) -> str | None:
        return None

    def apply(self, problem: AgentProblem) -> Units:
        """The units of the agent's gains: from its table on all inputs, or, beyond what
        can be tabulated, from its table on orbits (the same rows, so the same units)."""
        spec, agent = problem.spec, problem.agent
        if spec.parties <= MAX_TABULATED_PARTIES:
            return units_of(problem.table.gain_exact)
        symmetry = agent_symmetry(spec, agent)
        if symmetry is None:
            raise SizeLimitError(f"{spec.source}: {agent.name}: 2^{spec.parties} inputs "
                                 "cannot be tabulated, and the function has no symmetry")
        return units_of(orbit_table(spec, agent, symmetry).gain_exact)

    def invert(self, units: Units, value: float | None) -> float | None:
        """A value found on the unit gains, in the user's units."""
        return units.user(value)


def reduces(spec: MultipartySpec, agent: AgentSpec) -> Classes | None:
    """The agent's symmetry when it reduces the problem (fewer orbits than inputs)."""
    symmetry = agent_symmetry(spec, agent)
    if symmetry is None or symmetry.orbit_count >= 2 ** min(spec.parties, 62):
        return None
    return symmetry


class Symmetry:
    """Interchangeable parties: the problem on orbits (module docstring)."""

    def accepts(self, problem: AgentProblem) -> str | None:
        if reduces(problem.spec, problem.agent) is None:
            return "the function has no symmetry to reduce by"
        return None

    def apply(self, problem: AgentProblem) -> tuple[OrbitProblem, Classes]:
        """The agent's problem on orbits (SizeLimitError when it is not symmetric)."""
        from dpverify.theory.orbits.certificates import OrbitProblem  # the orbit route only

        spec, agent = problem.spec, problem.agent
        symmetry = agent_symmetry(spec, agent)
        if symmetry is None:
            raise SizeLimitError(f"{spec.source}: {agent.name}: the function is not "
                                 "symmetric (no orbit method)")
        table = orbit_table(spec, agent, symmetry)
        own = None if agent.party == 0 else symmetry.classes.index((agent.party,))
        return OrbitProblem(symmetry.classes, table.outputs, table.gain_exact, own), symmetry

    def invert(self, value: Fraction) -> Fraction:
        """The optimum on orbits is the optimum (an optimal solution constant on orbits
        exists): the identity."""
        return value


GAIN_UNITS = GainUnits()
SYMMETRY = Symmetry()
