"""Verdicts and results (spec.md, "Results"): frozen dataclasses with their JSON form."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpverify.defaults import Method
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.setting import Setting, result_setting
from dpverify.verdict import Verdict, worst_verdict  # their home: dpverify/verdict.py


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


@record
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


@record
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proof:
        """The proof as a result's JSON holds it (the bracket's width only)."""
        width = data.get("width")
        bracket = None if width is None else Bracket(None, None, width)
        return cls(str(data["status"]), bracket, data.get("value"), data.get("reason", ""))


@record
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Interior | None:
        points = data.get("interior_points")
        if points is None:
            return None
        return cls(points["grid"], points["samples"], points["seed"],
                   data.get("interior_optimum"))


@record
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CrossCheck:
        return cls(data["method"], data["relaxed_optimum"], data["rr_value"],
                   Verdict(data["verdict"]), data["agrees"])


@record
class Attempt:
    """One route the planner ran for an agent and accuracy (verifiers/multiparty/planner.py):
    its method, its verdict and the code of its reason (the reason of the result names the
    routes passed over, in words)."""

    method: str
    verdict: Verdict
    code: ReasonCode | None = None

    def to_json(self) -> dict[str, Any]:
        return {"method": str(self.method), "verdict": self.verdict.value,
                "reason_code": None if self.code is None else self.code.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        code = data.get("reason_code")
        return cls(data["method"], Verdict(data["verdict"]),
                   None if code is None else ReasonCode(code))


def reason_fields(reason: str, code: ReasonCode | None) -> dict[str, Any]:
    """A result's `reason` and, beside it, its `reason_code` (docs/format.md): both when
    there is a reason, neither when there is none."""
    if not reason:
        return {}
    return {"reason": reason, "reason_code": None if code is None else code.value}


def code_of(data: dict[str, Any]) -> ReasonCode | None:
    """A result object's reason code (None without one, or one this version does not
    know: results stored by an older build have none)."""
    code = data.get("reason_code")
    return ReasonCode(str(code)) if code in ReasonCode._value2member_map_ else None


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
    def verdict(self) -> Verdict: ...
    @property
    def seconds(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def code(self) -> ReasonCode | None: ...
    @property
    def optimum(self) -> float | None: ...
    def to_json(self) -> dict[str, Any]: ...


@record(eq=False, repr=False)
class AgentResult(Notebook):
    """One (agent, accuracy) comparison of a multi-party problem on bits: `bound`, the
    upper bound over every DP protocol that decided it (the relaxed corner LP's optimum
    for the method `lp`, the certificate's bound for `proof` and `orbit`), against
    `rr_value`, randomized response with its optimal rule. The result JSON names the bound
    `relaxed_optimum` (docs/format.md: the contract keeps the name), as the property of
    that name does."""

    notebook_columns = ("agent", "accuracy", "relaxed_optimum", "rr_value", "best_value",
                        "gap", "interior_optimum", "verdict", "method", "proof.status")

    agent: str
    accuracy: str
    bound: float | None  # the upper bound of the route that decided (class docstring)
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
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)
    attempts: tuple[Attempt, ...] = ()  # the routes run, when more than one was

    @property
    def relaxed_optimum(self) -> float | None:
        """`bound`, by the name the result JSON gives it."""
        return self.bound

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries are compared with: the verified optimum."""
        return self.bound

    @property
    def gap(self) -> float | None:
        if self.bound is None or self.rr_value is None:
            return None
        return self.bound - self.rr_value

    def to_json(self) -> dict[str, Any]:
        """spec.md's result object (plain JSON values)."""
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "relaxed_optimum": _num(self.bound), "rr_value": _num(self.rr_value),
            "gap": _num(self.gap), "verdict": self.verdict.value, "method": str(self.method),
            "seconds": round(self.seconds, 4),
        }
        out.update(reason_fields(self.reason, self.code))
        out.update(self._optional())
        return plain(out)

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentResult:
        """The result read back from its JSON (docs/format.md): every field the JSON holds
        (a decision rule, the duals and the outputs are not in it)."""
        return cls(**cls._fields_of(data))

    @staticmethod
    def _fields_of(data: dict[str, Any]) -> dict[str, Any]:
        proof, cross = data.get("proof"), data.get("cross_check")
        return {"agent": data["agent"], "accuracy": data["accuracy"],
                "bound": data.get("relaxed_optimum"), "rr_value": data.get("rr_value"),
                "verdict": Verdict.of(data.get("verdict")), "seconds": data.get("seconds", 0.0),
                "reason": data.get("reason", ""), "method": data.get("method", Method.LP),
                "proof": None if proof is None else Proof.from_json(proof),
                "interior": Interior.from_json(data),
                "cross_check": None if cross is None else CrossCheck.from_json(cross),
                "code": code_of(data),
                "attempts": tuple(Attempt.from_json(a) for a in data.get("attempts", ()))}

    def _optional(self) -> dict[str, Any]:
        """The optional fields (spec.md), in their order."""
        out: dict[str, Any] = {}
        if self.interior is not None:
            out.update(self.interior.to_json())
        if self.proof is not None:
            out["proof"] = self.proof.to_json()
        if self.cross_check is not None:
            out["cross_check"] = self.cross_check.to_json()
        if self.attempts:
            out["attempts"] = [a.to_json() for a in self.attempts]
        return out


@record(eq=False, repr=False)
class SymbolResult(AgentResult):
    """One (agent, accuracy) of a problem with more than two symbols (docs/theory.md,
    section 6): `bound` the exact ray-product bound, `rr_value` m-ary RR's
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SymbolResult:
        return cls(**cls._fields_of(data), best_value=data.get("best_value"),
                   witness=data.get("witness"))


_NOT_HEADER = ("problem", "source", "kind", "verdict", "reason", "reason_code", "results",
               "invalid")


@record(eq=False, repr=False)
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
    code: ReasonCode | None = None  # what the problem's reason says (dpverify/reasons.py)
    invalid: bool = False  # not a valid problem file (bad input, exit 2): `"invalid": true`

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
        out.update(reason_fields(self.reason, self.code))
        if self.invalid:
            out["invalid"] = True
        out["results"] = [plain(r.to_json()) for r in self.results]
        return out

    def first_reason(self) -> str:
        """Why it is not as claimed, in one line: the problem's reason, else its first
        result that is not optimal (its reason, else its gap, else its verdict)."""
        if self.reason:
            return self.reason.splitlines()[0]
        for r in self.results:
            if r.verdict is not Verdict.OPTIMAL:
                what = f"{r.agent} {r.accuracy}"
                gap = getattr(r, "gap", None)
                if r.reason:
                    return f"{what}: {r.reason.splitlines()[0]}"
                return f"{what}: gap {gap:.3g}" if gap is not None else f"{what}: {r.verdict}"
        return ""

    def relabelled(self, source: str, problem: str) -> ProblemResult:
        """The same result for identical bytes read under another path (a batch computes
        them once): its `source` and `problem`, and a reason that starts with the old path
        (`bad.toml: ...`, as refusals and bad input say) starting with the new one."""
        old = f"{self.source}: "
        reason = source + ": " + self.reason[len(old):] \
            if self.source and self.reason.startswith(old) else self.reason
        return replace(self, source=source, problem=problem, reason=reason)

    def named(self, problem: str, kind: str) -> ProblemResult:
        """A result made without its problem (a timeout, a worker that died), with the
        problem's name and kind when they are known; a result with results as it is."""
        if self.results or self.kind != "unknown":
            return self
        return replace(self, problem=problem, kind=kind)

    @classmethod
    def from_json(cls, data: dict[str, Any],
                  result_type: Callable[[str, Setting], Any]) -> ProblemResult:
        """The problem's result read back from its JSON (docs/format.md), each result by
        the type `result_type(kind, setting)` gives (verifiers/dispatch.py, RESULT_TYPES:
        one per kind and setting): from_json(data).to_json() is data again."""
        kind = str(data.get("kind", "unknown"))
        results = data.get("results") or []
        header = {k: v for k, v in data.items() if k not in _NOT_HEADER}
        setting = result_setting(kind, header) if results else None
        typed = tuple(result_type(kind, setting).from_json(r) for r in results) \
            if setting is not None else ()
        return cls(str(data.get("problem", "")), str(data.get("source", "")), kind, typed,
                   header, data.get("reason", ""), setting, code_of(data),
                   bool(data.get("invalid", False)))
