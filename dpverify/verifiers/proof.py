"""A certificate as a result reports it (`Proof`, the result's `proof` field), for every
certificate format (multi-party bits, orbits, more than two symbols), and the verdict an
exact certificate gives once the independent checker has confirmed it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpverify.spec.model import MultipartySpec
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED, Certificate
from dpverify.theory.exact import rational_string
from dpverify.verifiers.result import Bracket, BracketMethod, Proof, Verdict


def _float(v: Fraction) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def certificate_bracket(cert: Certificate, checked: bool = False) -> Bracket:
    """`[value, bound]` of a certificate (user units) with its exact width."""
    return Bracket(_float(cert.value), _float(cert.bound), _float(cert.bound - cert.value),
                   BracketMethod.EXACT, checked)


def proof_of(cert: Certificate, checked: bool = False) -> Proof:
    """The certificate's status and bracket; for a proof the exact optimum ("p/q")."""
    bracket = certificate_bracket(cert, checked)
    if cert.status == PROVED:
        return Proof(str(PROVED), Bracket(bracket.lower, bracket.upper, 0.0,
                                          bracket.method, checked),
                     value=rational_string(cert.value))
    if cert.status == BRACKET:
        return Proof(str(BRACKET), bracket)
    return Proof(str(UNPROVED), bracket)


def unproved(reason: str) -> Proof:
    """No certificate (a size limit, a solver failure): why."""
    return Proof(str(UNPROVED), None, reason=reason)


@dataclass(frozen=True)
class ExactVerdict:
    """What a checked certificate decides: `optimal` when it proves the optimum, or
    brackets it within the tolerance; else `error` (undecided); `how` says which, in words
    (`proves the optimum exactly`, `brackets the optimum within 1.2e-21`, or why not)."""

    verdict: Verdict
    how: str
    proof: Proof
    checked: bool


def exact_verdict(spec: MultipartySpec, cert: Certificate, tol: Fraction) -> ExactVerdict:
    """The certificate checked by the independent checker (`dpverify.checker`, on its JSON
    form: it shares nothing with the construction), then its verdict at the tolerance
    `tol` (the user's units). A certificate that fails the check is a bug, never a pass."""
    from dpverify.checker import check_certificate

    checked = check_certificate(spec, cert.to_json(spec.name))
    proof = proof_of(cert, checked.ok)
    if not checked.ok:
        return ExactVerdict(Verdict.ERROR, f"fails the independent check ({checked.message})",
                            proof, False)
    width = cert.bound - cert.value
    if cert.status == PROVED:
        return ExactVerdict(Verdict.OPTIMAL, "proves the optimum exactly", proof, True)
    if cert.status == BRACKET and width <= tol:
        return ExactVerdict(Verdict.OPTIMAL,
                            f"brackets the optimum within {_float(width):.3g}", proof, True)
    return ExactVerdict(Verdict.ERROR, (
        f"brackets the optimum in [{_float(cert.value):.12g}, {_float(cert.bound):.12g}] "
        f"(width {_float(width):.3g}), wider than --tol"), proof, True)
