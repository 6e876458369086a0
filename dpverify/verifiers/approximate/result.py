"""The result of one agent and accuracy under (epsilon_i, delta_i)-DP (docs/theory.md,
"Approximate privacy"; verifiers/approximate/verifier.py builds it), apart from its
verifier so that the console and the runner read it without loading the LPs."""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from typing import Any, ClassVar

from dpverify.defaults import Method
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.numbers import parse_rational as parse_exact_text
from dpverify.spec.numbers import rational_text
from dpverify.theory.approx.hockey import DeltaBracket
from dpverify.verifiers.result import Proof, Verdict, code_of, reason_fields

# The verdicts are those of every result (verifiers/result.py): optimal, interaction-helps
# (a finding: exit status 1), open (undecided: exit status 3) and error.
SHORT_EXACT = 40  # exact values are written in JSON as "p/q" up to this many characters


def _exact_text(value: Fraction | None) -> str | None:
    if value is None:
        return None
    text = rational_text(value)
    return text if len(text) <= SHORT_EXACT else None


@record(eq=False, repr=False)
class ApproxResult(Notebook):
    """One agent and accuracy (module docstring), values in the user's units; the exact
    numbers (user units) beside the floats; `witness` the path of the best protocol's file
    (None when RR is best, or when no directory was given) and `witness_text` its text;
    `witness_deltas` its achieved deltas at the claimed levels."""

    notebook_columns: ClassVar[tuple[str, ...]] = (
        "agent", "accuracy", "relaxed_optimum", "rr_value", "best_value", "advantage",
        "verdict", "method", "proof.status")

    agent: str
    accuracy: str
    deltas: tuple[Fraction, ...]
    relaxed_optimum: float | None
    rr_value: float | None
    best_value: float | None
    witness: str | None
    verdict: Verdict
    reason: str
    seconds: float
    relaxed_optimum_exact: Fraction | None = None
    rr_value_exact: Fraction | None = None
    best_value_exact: Fraction | None = None
    witness_deltas: tuple[DeltaBracket, ...] = ()
    origin: str = ""
    search_starts: int = 0
    search_steps: int = 0
    witness_text: str | None = None
    method: str = Method.ENVELOPE  # the envelope bound (docs/theory.md 7.10)
    proof: Proof | None = None  # --certify: the bound's certificate, checked
    closed: bool = False  # interaction-helps with the bracket [best, bound] within --tol
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)
    # a result read back from JSON: `witness_deltas` as the JSON wrote them (a bracket of
    # two floats that print alike stays a bracket)
    shown_deltas: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)
    # and its `bracket_width` as written (from exact ends too long to be written)
    shown_width: float | None = field(default=None, compare=False, repr=False)

    @property
    def bracket_width(self) -> float | None:
        """bound - the best protocol found (user units): how far the optimum is known."""
        if self.shown_width is not None:
            return self.shown_width
        if self.relaxed_optimum_exact is not None and self.best_value_exact is not None:
            return float(self.relaxed_optimum_exact - self.best_value_exact)
        if self.relaxed_optimum is None or self.best_value is None:
            return None
        return self.relaxed_optimum - self.best_value

    @property
    def optimum(self) -> float | None:
        """The value `[expect]` entries and the results store compare: the bound."""
        return self.relaxed_optimum

    @property
    def gap(self) -> float | None:
        """bound - the best non-interactive value."""
        if self.relaxed_optimum is None or self.rr_value is None:
            return None
        return self.relaxed_optimum - self.rr_value

    @property
    def advantage(self) -> float | None:
        """What interaction is shown to gain: the best protocol found minus the best
        non-interactive value, RR(epsilon, delta) (0 when RR is the best found)."""
        if self.best_value is None or self.rr_value is None:
            return None
        return self.best_value - self.rr_value

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent, "accuracy": self.accuracy,
            "delta": [rational_text(d) for d in self.deltas],
            "relaxed_optimum": self.relaxed_optimum, "rr_value": self.rr_value,
            "best_value": self.best_value, "witness": self.witness, "gap": self.gap,
            "advantage": self.advantage, "bracket_width": self.bracket_width,
            "verdict": self.verdict.value, "method": self.method,
            "seconds": round(self.seconds, 4)}
        if self.verdict is Verdict.INTERACTION_HELPS:
            out["closed"] = self.closed
            if self.closed:  # the interactive optimum, within --tol (exact when equal)
                out["optimum"] = self.best_value
                if self.best_value_exact == self.relaxed_optimum_exact:
                    text = _exact_text(self.best_value_exact)
                    if text is not None:
                        out["optimum_exact"] = text
        exact = {"relaxed_optimum_exact": _exact_text(self.relaxed_optimum_exact),
                 "rr_value_exact": _exact_text(self.rr_value_exact),
                 "best_value_exact": _exact_text(self.best_value_exact)}
        out.update({k: v for k, v in exact.items() if v is not None})
        if self.shown_deltas is not None:
            out["witness_deltas"] = list(self.shown_deltas)
        elif self.witness_deltas:  # "p/q" when short, else floats; [lower, upper] brackets
            def short(v: Fraction) -> str | float:
                return _exact_text(v) or float(v)

            out["witness_deltas"] = [short(b.upper) if b.exact else
                                     [short(b.lower), short(b.upper)]
                                     for b in self.witness_deltas]
        out["search"] = {"origin": self.origin, "starts": self.search_starts,
                         "steps": self.search_steps}
        if self.proof is not None:
            out["proof"] = self.proof.to_json()
        out.update(reason_fields(self.reason, self.code))
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApproxResult:
        """The result read back from its JSON (the witness's text is not in it)."""
        def exact(key: str) -> Fraction | None:
            text = data.get(key)
            return None if text is None else parse_exact_text(text)

        def bracket(entry: Any) -> DeltaBracket:
            ends = entry if isinstance(entry, list) else [entry, entry]
            lower, upper = (parse_exact_text(v) if isinstance(v, str) else Fraction(v)
                            for v in ends)
            return DeltaBracket(lower, upper)

        search = data.get("search", {})
        proof = data.get("proof")
        return cls(data["agent"], data["accuracy"],
                   tuple(parse_exact_text(d) for d in data.get("delta", ())),
                   data.get("relaxed_optimum"), data.get("rr_value"), data.get("best_value"),
                   data.get("witness"), Verdict.of(data.get("verdict")), data.get("reason", ""),
                   data.get("seconds", 0.0), relaxed_optimum_exact=exact("relaxed_optimum_exact"),
                   rr_value_exact=exact("rr_value_exact"),
                   best_value_exact=exact("best_value_exact"),
                   witness_deltas=tuple(bracket(b) for b in data.get("witness_deltas", ())),
                   shown_deltas=(tuple(data["witness_deltas"]) if "witness_deltas" in data
                                 else None), shown_width=data.get("bracket_width"),
                   origin=search.get("origin", ""), search_starts=search.get("starts", 0),
                   search_steps=search.get("steps", 0), method=data.get("method", Method.ENVELOPE),
                   proof=None if proof is None else Proof.from_json(proof),
                   closed=bool(data.get("closed", False)), code=code_of(data))


__all__ = ["ApproxResult"]
