"""The result of a count problem (spec.md: `agent` "consumer", `accuracy` "minimax" or
"bayes", `mechanism_optimum` and `geometric_value`), apart from its verifier so that the
console and the runner read it without loading the LPs."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpverify.defaults import Method
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.verifiers.result import Bracket, Verdict, code_of, plain, reason_fields


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


@record(eq=False, repr=False)
class CountResult(Notebook):
    """The one result of a count problem (module docstring). Losses are minimised, so
    `gap = geometric_value - mechanism_optimum`; `mechanism_bounds` the rigorous bracket of
    the optimal mechanism's loss when it is reported (the verdict undecided, or alpha
    below what a float LP keeps); `note` a sentence for a human."""

    agent: str
    accuracy: str
    mechanism_optimum: float | None
    geometric_value: float | None
    hypothesis: str  # "monotone" or "not-monotone": is l(i, r) non-decreasing in |i - r|?
    verdict: Verdict
    seconds: float
    reason: str = ""
    mechanism: np.ndarray | None = None  # an optimal alpha-DP mechanism x*[i, r]
    post_processing: np.ndarray | None = None  # T[k, r]: G T is the candidate mechanism
    note: str = ""
    mechanism_bounds: Bracket | None = None
    delta: str | None = None  # delta > 0 (theory.md section 7): delta as "p/q"
    best: str | None = None  # with delta: "geometric" or "lp", the best mechanism found
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)

    notebook_columns = ("agent", "accuracy", "mechanism_optimum", "geometric_value", "gap",
                        "hypothesis", "delta", "best", "verdict")
    rule: ClassVar[None] = None  # count results have no multi-party decision rule
    # the LPs, with rigorous brackets (a gap is confirmed in exact arithmetic)
    method: ClassVar[str] = Method.LP

    @property
    def gap(self) -> float | None:
        if self.mechanism_optimum is None or self.geometric_value is None:
            return None
        return self.geometric_value - self.mechanism_optimum

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries are compared with: the optimal mechanism's loss."""
        return self.mechanism_optimum

    def to_json(self) -> dict[str, Any]:
        """spec.md's result object (plain JSON values)."""
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "mechanism_optimum": _num(self.mechanism_optimum),
            "geometric_value": _num(self.geometric_value),
            "gap": _num(self.gap), "verdict": self.verdict.value,
            "hypothesis": self.hypothesis, "method": str(self.method),
            "seconds": round(self.seconds, 4),
        }
        out.update(reason_fields(self.reason, self.code))
        if self.delta is not None:
            out["delta"] = self.delta
            out["best"] = self.best
        if self.mechanism_bounds is not None:
            out["mechanism_bounds"] = self.mechanism_bounds.to_json()
        if self.note:
            out["note"] = self.note
        return plain(out)

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CountResult:
        """The result read back from its JSON (the mechanisms themselves are not in it)."""
        bounds = data.get("mechanism_bounds")
        return cls(data["agent"], data["accuracy"], data.get("mechanism_optimum"),
                   data.get("geometric_value"), data.get("hypothesis", ""),
                   Verdict.of(data.get("verdict")), data.get("seconds", 0.0),
                   reason=data.get("reason", ""), note=data.get("note", ""),
                   mechanism_bounds=None if bounds is None else Bracket.of(*bounds),
                   delta=data.get("delta"), best=data.get("best"), code=code_of(data))
