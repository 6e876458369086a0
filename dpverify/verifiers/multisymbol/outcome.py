"""One agent and accuracy of the verifier for more than two symbols (verifier.py), exactly,
in normalised gains: the numbers its verdict, its certificate (certify.py) and its proof
summary are made from."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from dpverify.reasons import ReasonCode
from dpverify.theory.symbols.certificate import SymbolCertificate
from dpverify.verifiers.multisymbol.bound import ExactBound
from dpverify.verifiers.result import Verdict


@dataclass
class Outcome:
    """One agent and accuracy, exactly, in normalised gains (module docstring)."""

    verdict: Verdict = Verdict.ERROR
    reason: str = ""
    code: ReasonCode | None = None  # what the reason says (dpverify/reasons.py)
    bound: ExactBound | None = None
    rr_low: Fraction | None = None
    rr_high: Fraction | None = None
    best: Fraction | None = None
    best_channels: list | None = None  # exact channels of the best protocol (RR's or not)
    best_rule: list | None = None  # its exact decision rule[a][o][y]
    origin: str = "rr"
    witness: Path | None = None
    notes: list[str] = field(default_factory=list)
    # dpverify-mary-certificate/1, checked independently (`checked`: it passed)
    certificate: SymbolCertificate | None = None
    checked: bool = False
