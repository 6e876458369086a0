"""Entry points for one problem: dispatch on its kind (once, through one table), return a
ProblemResult."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dpverify.spec import Spec, load
from dpverify.spec.model import Kind
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import ProblemResult


def _multiparty(spec, options: VerifyOptions) -> ProblemResult:
    if spec.approximate:  # delta > 0: the envelope bound, RR(epsilon, delta), the search
        from dpverify.verifiers.approximate.problem import verify_approximate

        return verify_approximate(spec, options)
    if not spec.binary:  # more than two symbols: research mode (docs/theory.md, section 6)
        from dpverify.verifiers.multisymbol.verifier import verify_multisymbol

        return verify_multisymbol(spec, options)
    from dpverify.verifiers.multiparty.methods import verify_problem  # each agent by its method

    return verify_problem(spec, options)


def _count(spec, options: VerifyOptions) -> ProblemResult:
    from dpverify.verifiers.count.verifier import (
        verify_count,  # lazy: each kind loads its own modules
    )

    return verify_count(spec, options)


def _protocol(spec, options: VerifyOptions) -> ProblemResult:
    from dpverify.verifiers.audit.protocol import audit_protocol

    return audit_protocol(spec, options)


VERIFIERS: dict[Kind, Callable[..., ProblemResult]] = {
    Kind.MULTIPARTY: _multiparty,
    Kind.COUNT: _count,
    Kind.PROTOCOL: _protocol,
}


def verify_spec(spec: Spec, options: VerifyOptions) -> ProblemResult:
    """Verify a loaded problem of any kind."""
    return VERIFIERS[spec.kind](spec, options)


def verify_file(path: str | Path, options: VerifyOptions) -> ProblemResult:
    """Load and verify one problem file. SpecError / SizeLimitError propagate to the caller
    (dpverify.runner.files.verify_path turns them into results; find_problem_files finds
    the files under directories)."""
    return verify_spec(load(path), options)
