"""Typed results (issue 18 point 1): the `Result` protocol every kind of result meets, its
plain JSON, and one console view per result type (console/views.py), picked by type."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import pytest
from rich.console import Console

from dpverify.console.verify import common_method, print_problem
from dpverify.console.views import (
    ANY,
    VIEWS,
    ApproximateView,
    BitsView,
    CountView,
    MechanismView,
    ProtocolView,
    SymbolView,
    view_of,
)
from dpverify.reasons import ReasonCode
from dpverify.spec import load, loads
from dpverify.spec.setting import Setting
from dpverify.spec.setting import keys as keys_of
from dpverify.verifiers.approximate.result import ApproxResult
from dpverify.verifiers.audit.result import AuditResult, MechanismResult
from dpverify.verifiers.count.result import CountResult
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import (
    AgentResult,
    Bracket,
    ProblemResult,
    Proof,
    Result,
    SymbolResult,
    Verdict,
    plain,
)


def _results() -> list[Any]:
    v = Verdict.OPTIMAL
    return [
        AgentResult("observer", "average", 0.5, 0.5, v, 0.1),
        SymbolResult("observer", "average", 0.5, 0.5, v, 0.1, best_value=0.5),
        CountResult("consumer", "minimax", 1.0, 1.0, "monotone", v, 0.1,
                    mechanism_bounds=Bracket.of(0.9, 1.0)),
        AuditResult("observer", "average", 0.5, 0.6, 0.6, 0.6, 0.8, Verdict.SUBOPTIMAL, 0.1),
        MechanismResult("consumer", "minimax", 1.0, 1.0, 1.0, 1.0, 1.0, v, 0.1,
                        loss_bounds=Bracket.of(0.9, 1.0)),
    ]


@pytest.mark.parametrize("result", _results(), ids=lambda r: type(r).__name__)
def test_every_result_meets_the_protocol_with_plain_json(result):
    assert isinstance(result, Result)
    data = result.to_json()
    assert data == json.loads(json.dumps(data)) == plain(data)
    assert result.to_dict() == data and isinstance(data["verdict"], str)


def test_brackets_and_proofs_keep_their_json_fields():
    count, mechanism = _results()[2], _results()[4]
    assert count.to_json()["mechanism_bounds"] == [0.9, 1.0]
    assert mechanism.to_json()["mechanism_loss_bounds"] == [0.9, 1.0]
    proof = Proof("bracket", Bracket(0.5, 0.5 + 1e-20, 1e-20, "exact", True))
    assert proof.to_json() == {"status": "bracket", "width": 1e-20}
    assert Proof("unproved", None, reason="why").to_json() == {
        "status": "unproved", "width": None, "reason": "why"}


def test_each_kind_and_setting_has_its_view():
    """The view is chosen by (kind, setting) through one table, not by a result's type."""
    keys = (("multiparty", Setting.BITS), ("multiparty", Setting.SYMBOLS),
            ("count", Setting.PURE), ("protocol", Setting.BITS),
            ("mechanism", Setting.PURE))
    views = (BitsView, SymbolView, CountView, ProtocolView, MechanismView)
    for result, (kind, setting), view in zip(_results(), keys, views, strict=True):
        problem = ProblemResult("p", "p.toml", kind, (result,), setting=setting)
        assert isinstance(view_of(problem), view)
    assert view_of(ProblemResult("p", "p.toml", "multiparty", ())) is ANY
    # built without its spec: the setting read from the header (spec/setting.py)
    assert isinstance(view_of(ProblemResult("p", "p.toml", "multiparty", (_results()[0],))),
                      BitsView)
    assert view_of(ProblemResult("p", "p.toml", "x", (_results()[0],))) is ANY
    assert set(VIEWS) == set(keys_of())
    delta = verify_spec(load("problems/approximate/bit-1-delta.toml"), VerifyOptions())
    assert isinstance(delta.results[0], ApproxResult)
    assert isinstance(view_of(delta), ApproximateView)


@dataclass(frozen=True)
class Other:
    """A result type with no view of its own (as the approximate-privacy one may be)."""

    agent: str = "observer"
    accuracy: str = "worst"
    verdict: Verdict = Verdict.OPTIMAL
    seconds: float = 0.25
    reason: str = "shown under the table"
    method: str = "rays"
    optimum: float | None = 0.123456
    code: ReasonCode | None = None

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent}


def _printed(result: ProblemResult) -> str:
    buffer = io.StringIO()
    print_problem(Console(file=buffer, width=200), result)
    return buffer.getvalue()


def test_a_result_type_without_a_view_is_shown_through_the_protocol():
    other = Other()
    assert isinstance(other, Result)
    problem = ProblemResult("p", "p.toml", "x", (other,), setting=Setting.BITS)
    assert view_of(problem) is ANY
    text = _printed(problem)
    assert "0.123456" in text and "rays" in text and "shown under the table" in text


def test_count_notes_and_symbol_columns_come_from_their_views():
    count = verify_spec(load("problems/count/parity-gap-6.toml"), VerifyOptions())
    (r,) = count.results
    text = _printed(count)
    assert "mechanism optimum" in text and (not r.note or r.note in text)
    assert common_method(count) is None  # no method column for counts
    symbols = verify_spec(load("problems/multisymbol/xor-3x2.toml"), VerifyOptions())
    text = _printed(symbols)
    assert "best found" in text and "rays" in text
    assert common_method(symbols) == "rays"


def test_bits_results_show_their_method_and_proof_column():
    spec = loads('[problem]\nname = "x"\nparties = 2\nlambda = "2"\n[observer]\n'
                 'function = "xor"\n')
    result = verify_spec(spec, VerifyOptions())
    buffer = io.StringIO()
    print_problem(Console(file=buffer, width=200), result, show_proof=True)
    text = buffer.getvalue()
    assert "proof" in text and "proved" in text
    assert common_method(result) == "proof"
