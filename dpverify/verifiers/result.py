"""Verdicts and results (spec.md, "Results"): frozen dataclasses with their JSON form."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Verdict(enum.StrEnum):
    OPTIMAL = "optimal"
    GAP = "gap"
    ERROR = "error"
    # protocol audits (verifiers/audit/protocol.py): below the bound but private (the normal case,
    # yet
    # a finding against a claim of optimality: exit status 1); misses a claimed privacy
    # level; beats the bound at its own levels (a bug)
    SUBOPTIMAL = "suboptimal"
    NOT_PRIVATE = "not-private"
    CONTRADICTION = "contradiction"
    # inputs with more than two symbols (verifiers/multisymbol/verifier.py): the optimum lies
    # strictly
    # between the best protocol found and the bound; whether m-ary RR is optimal is not
    # decided (exit status 3, with `error`)
    OPEN = "open"
    # approximate privacy (verifiers/approximate/): an exactly private interactive protocol
    # beats every non-interactive one, RR(epsilon, delta) (a finding: exit status 1)
    INTERACTION_HELPS = "interaction-helps"


# `open` ranks with the undecided, just below `error`, as its exit status (3) says
_RANK = {Verdict.OPTIMAL: 0, Verdict.SUBOPTIMAL: 1, Verdict.GAP: 2,
         Verdict.INTERACTION_HELPS: 3, Verdict.NOT_PRIVATE: 4, Verdict.CONTRADICTION: 5,
         Verdict.OPEN: 6, Verdict.ERROR: 7}
# Exit statuses are decided in one place for every command: dpverify.status.


def worst_verdict(verdicts) -> Verdict:
    """A problem's verdict is the worst of its results (optimal < suboptimal < gap <
    interaction-helps < not-private < contradiction < open < error)."""
    out = Verdict.OPTIMAL
    for v in verdicts:
        if _RANK[v] > _RANK[out]:
            out = v
    return out


def judge(upper: float | None, lower: float | None, tol: float) -> tuple[Verdict, str]:
    """Compare an upper bound (the LP optimum) with the candidate's value.

    optimal when upper - lower <= tol; gap when the candidate falls short by more; and an
    error when the candidate *beats* the upper bound by more than tol, which no correct
    computation can produce (a solver or modelling failure must never pass as optimal).
    """
    if not (math.isfinite(tol) and tol >= 0):
        raise ValueError(f"the tolerance must be a finite number >= 0: {tol!r}")
    if upper is None or lower is None or not (math.isfinite(upper) and math.isfinite(lower)):
        return Verdict.ERROR, "no value"
    gap = upper - lower
    if -tol <= gap <= tol:
        return Verdict.OPTIMAL, ""
    if gap > tol:
        return Verdict.GAP, ""
    return Verdict.ERROR, (f"the candidate's value exceeds the upper bound by {-gap:.3g}: "
                           "a numerical failure")


def plain(value: Any) -> Any:
    """`value` as the JSON it prints as: enum members (Kind, Model, Verdict) as their
    values, numpy scalars as Python numbers, tuples as lists; equal to
    `json.loads(json.dumps(value))` for JSON-able data."""
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bool):
        return value
    for base in (int, float, str):  # a subclass (an IntEnum is caught above) as its base
        if isinstance(value, base) and type(value) is not base:
            return base(value)
    return value


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


@dataclass(frozen=True, eq=False)
class AgentResult:
    """One (agent, accuracy) comparison of a multi-party problem."""

    agent: str
    accuracy: str
    relaxed_optimum: float | None
    rr_value: float | None
    verdict: Verdict
    seconds: float
    reason: str = ""
    rule: np.ndarray | None = None  # observer: Q[tau, y]; party: Q[b, tau, y]
    outputs: tuple = ()
    mu: np.ndarray | None = None  # the relaxed LP's duals (float): an upper-bound witness
    pi: np.ndarray | None = None
    method: str = "lp"  # what decided the verdict: "lp" (float LPs agree), "proof" (exact)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries are compared with: the verified optimum."""
        return self.relaxed_optimum

    @property
    def gap(self) -> float | None:
        if self.relaxed_optimum is None or self.rr_value is None:
            return None
        return self.relaxed_optimum - self.rr_value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "relaxed_optimum": _num(self.relaxed_optimum), "rr_value": _num(self.rr_value),
            "gap": _num(self.gap), "verdict": self.verdict.value, "method": self.method,
            "seconds": round(self.seconds, 4),
        }
        if self.reason:
            out["reason"] = self.reason
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out


@dataclass(frozen=True, eq=False)
class ProblemResult:
    """All results of one problem file (spec.md's result object)."""

    problem: str
    source: str
    kind: str
    results: tuple[Any, ...]
    header: dict[str, Any] = field(default_factory=dict)  # kind-specific: parties, lambdas
    reason: str = ""  # set when the whole problem could not be decided

    @property
    def verdict(self) -> Verdict:
        if not self.results:
            return Verdict.ERROR
        return worst_verdict(r.verdict for r in self.results)

    @property
    def seconds(self) -> float:
        return float(sum(r.seconds for r in self.results))

    def to_dict(self) -> dict[str, Any]:
        """spec.md's result object: what `dpverify verify --json` prints for the problem,
        in plain JSON values (strings, numbers, lists, dicts: never an enum member)."""
        return plain(self.to_json())

    def to_json(self) -> dict[str, Any]:
        """The same as `to_dict` (the older name)."""
        out: dict[str, Any] = {"problem": self.problem, "source": self.source, "kind": self.kind}
        out.update(self.header)
        out["verdict"] = self.verdict.value
        if self.reason:
            out["reason"] = self.reason
        out["results"] = [r.to_json() for r in self.results]
        return out
