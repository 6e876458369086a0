"""The method `lp` (the relaxed corner LP against RR's decision LPs, settled exactly when
the floats cannot decide) through the production entry, for the tests that check that
method's own numbers: `verify_spec` with `method="lp"` (verifiers/multiparty/planner.py
takes the LP route alone)."""

from __future__ import annotations

from dataclasses import replace

from dpverify.defaults import Method
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import ProblemResult


def by_lp(spec, options: VerifyOptions | None = None) -> ProblemResult:
    """Every agent and accuracy of `spec` by the method `lp`."""
    return verify_spec(spec, replace(options or VerifyOptions(), method=Method.LP))
