"""Verdicts and results (spec.md, "Results"): frozen dataclasses with their JSON form."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpverify.defaults import Method
from dpverify.notebook import Notebook
from dpverify.spec.setting import Setting, result_setting


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


# -- the parts of a result -------------------------------------------------------------------
class BracketMethod(enum.StrEnum):
    """How the ends of a Bracket were computed."""

    EXACT = "exact"  # exact rationals (a certificate's value and bound)
    INTERVAL = "interval"  # outward-rounded floats: rigorous
    FLOAT = "float"  # floats with a rounding allowance (an LP's duals and solution)


@dataclass(frozen=True)
class Bracket:
    """An interval known to hold a value (an optimum, a loss): `lower <= value <= upper`,
    in the user's units; `width` is `upper - lower` as computed where the ends are exact
    (so it is not lost to the floats' rounding of two close ends); `method` says how the
    ends were computed, `checked` whether an independent checker confirmed them."""

    lower: float | None
    upper: float | None
    width: float | None
    method: str = BracketMethod.FLOAT
    checked: bool = False

    @classmethod
    def of(cls, lower: float | None, upper: float | None,
           method: str = BracketMethod.FLOAT, checked: bool = False) -> Bracket:
        """A bracket of two floats (the width their difference)."""
        width = None if lower is None or upper is None else upper - lower
        return cls(lower, upper, width, method, checked)

    def to_json(self) -> list[float | None]:
        """`[lower, upper]`, as results have always written a bracket."""
        return [self.lower, self.upper]


@dataclass(frozen=True)
class Proof:
    """A certificate as a result reports it (spec.md, the `proof` field): its status
    (`proved-optimal`, `bracket` or `unproved`; theory/certificates/format.py), the exact
    bracket it proves (`value <= OPT <= bound`, user units; None without a certificate),
    for a proof the exact optimum as a "p/q" string (`check --update` writes it into
    `[expect]`), and why it is unproved when it is."""

    status: str
    bracket: Bracket | None = None
    value: str | None = None
    reason: str = ""

    @property
    def width(self) -> float | None:
        """bound - value (0.0 when proved; None without a certificate)."""
        return None if self.bracket is None else self.bracket.width

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": str(self.status), "width": self.width}
        if self.value is not None:
            out["value"] = self.value
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Interior:
    """The relaxed LP over interior rank-one points (--grid, --samples): the points asked
    for and the optimum over them (user units; None when its LP failed)."""

    grid: int
    samples: int
    seed: int
    optimum: float | None

    def to_json(self) -> dict[str, Any]:
        return {"interior_points": {"grid": self.grid, "samples": self.samples,
                                    "seed": self.seed},
                "interior_optimum": self.optimum}


@dataclass(frozen=True)
class CrossCheck:
    """`verify --cross-check`: the second route's numbers for the same agent and accuracy
    (the LP beside an exact proof, or the proof beside the LP) and whether the two agree
    (the same verdict, both values within --tol)."""

    method: str  # what decided the second route's verdict
    relaxed_optimum: float | None
    rr_value: float | None
    verdict: Verdict
    agrees: bool

    def to_json(self) -> dict[str, Any]:
        return {"method": str(self.method), "relaxed_optimum": _num(self.relaxed_optimum),
                "rr_value": _num(self.rr_value), "verdict": self.verdict.value,
                "agrees": self.agrees}


# -- results ---------------------------------------------------------------------------------
@runtime_checkable
class Result(Protocol):
    """What every result of one agent and accuracy offers (multi-party, more than two
    symbols, count, audits, approximate privacy): the runner stores `optimum` and
    `to_json()`, `check` compares `optimum` with `[expect]`, the console picks a view by
    the result's type. `to_json()` (and `to_dict()`) are plain JSON values, the object
    `--json` prints."""

    @property
    def agent(self) -> str: ...
    @property
    def accuracy(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def optimum(self) -> float | None: ...
    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, eq=False, repr=False)
class AgentResult(Notebook):
    """One (agent, accuracy) comparison of a multi-party problem on bits."""

    notebook_columns = ("agent", "accuracy", "relaxed_optimum", "rr_value", "best_value",
                        "gap", "interior_optimum", "verdict", "method", "proof.status")

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
    method: str = Method.LP  # what decided the verdict (defaults.Method)
    proof: Proof | None = None  # the exact certificate, when one was built
    interior: Interior | None = None  # --grid, --samples
    cross_check: CrossCheck | None = None  # --cross-check

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
        """spec.md's result object (plain JSON values)."""
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "relaxed_optimum": _num(self.relaxed_optimum), "rr_value": _num(self.rr_value),
            "gap": _num(self.gap), "verdict": self.verdict.value, "method": str(self.method),
            "seconds": round(self.seconds, 4),
        }
        if self.reason:
            out["reason"] = self.reason
        out.update(self._optional())
        return plain(out)

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    def _optional(self) -> dict[str, Any]:
        """The optional fields (spec.md), in their order."""
        out: dict[str, Any] = {}
        if self.interior is not None:
            out.update(self.interior.to_json())
        if self.proof is not None:
            out["proof"] = self.proof.to_json()
        if self.cross_check is not None:
            out["cross_check"] = self.cross_check.to_json()
        return out


@dataclass(frozen=True, eq=False, repr=False)
class SymbolResult(AgentResult):
    """One (agent, accuracy) of a problem with more than two symbols (docs/theory.md,
    section 6): `relaxed_optimum` the exact ray-product bound, `rr_value` m-ary RR's
    value, `best_value` the best protocol found (RR's value when nothing beats it) and
    `witness` the file of a protocol that beats RR."""

    method: str = Method.RAYS
    best_value: float | None = None
    witness: str | None = None

    def _optional(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.best_value is not None:
            out["best_value"] = self.best_value
        if self.witness is not None:
            out["witness"] = self.witness
        return out | super()._optional()


@dataclass(frozen=True, eq=False, repr=False)
class ProblemResult(Notebook):
    """All results of one problem file (spec.md's result object); in a notebook, its
    results' table (dpverify/notebook.py)."""

    problem: str
    source: str
    kind: str
    results: tuple[Result, ...]
    header: dict[str, Any] = field(default_factory=dict)  # kind-specific: parties, lambdas
    reason: str = ""  # set when the whole problem could not be decided
    setting: Setting | None = None  # the spec's (spec/setting.py); None: no spec loaded

    def __post_init__(self) -> None:
        if self.setting is None and self.results:  # built without its spec: from the header
            object.__setattr__(self, "setting", result_setting(str(self.kind), self.header))

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

    def notebook_table_columns(self) -> tuple[str, ...]:
        """The columns of its results' type (a problem without results: its reason)."""
        for r in self.results[:1]:
            if isinstance(r, Notebook):
                return r.notebook_table_columns()
        return ("problem", "kind", "verdict", "reason")

    def to_json(self) -> dict[str, Any]:
        """The same as `to_dict` (the older name)."""
        out: dict[str, Any] = {"problem": self.problem, "source": self.source, "kind": self.kind}
        out.update(self.header)
        out["verdict"] = self.verdict.value
        if self.reason:
            out["reason"] = self.reason
        out["results"] = [plain(r.to_json()) for r in self.results]
        return out
