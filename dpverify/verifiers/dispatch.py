"""Entry points for one problem: the verifier chosen once, by the problem's kind and
setting (spec/setting.py), through one table; a ProblemResult back.

Each entry imports its verifier when it is first used, so that each kind loads its own
modules (`verify` of a count problem never imports the multi-party code).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpverify.spec import Spec, load
from dpverify.spec.setting import Setting
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import ProblemResult

if TYPE_CHECKING:
    from dpverify.spec.count_model import MechanismSpec

Verifier = Callable[..., ProblemResult]


def _bits(spec, options: VerifyOptions) -> ProblemResult:
    """Bits, pure DP: each agent and accuracy by its method (verifiers/multiparty)."""
    from dpverify.verifiers.multiparty.planner import verify_problem

    return verify_problem(spec, options)


def _symbols(spec, options: VerifyOptions) -> ProblemResult:
    """More than two symbols: research mode (docs/theory.md, section 6)."""
    from dpverify.verifiers.multisymbol.verifier import verify_multisymbol

    return verify_multisymbol(spec, options)


def _delta(spec, options: VerifyOptions) -> ProblemResult:
    """delta > 0: the envelope bound, RR(epsilon, delta), the search (section 7)."""
    from dpverify.verifiers.approximate.problem import verify_approximate

    return verify_approximate(spec, options)


def _delta_symbols(spec, options: VerifyOptions) -> ProblemResult:
    """delta > 0 with more than two symbols: refused (SizeLimitError, exit 3)."""
    from dpverify.verifiers.approximate.envelope import symbols_refusal

    raise symbols_refusal(spec)


def _count(spec, options: VerifyOptions) -> ProblemResult:
    """A count query, pure or with delta > 0 (the verifier's own table of the two)."""
    from dpverify.verifiers.count.verifier import verify_count

    return verify_count(spec, options)


def _protocol(spec, options: VerifyOptions) -> ProblemResult:
    """A protocol audit, by the setting of the levels it claims (its own table)."""
    from dpverify.verifiers.audit.protocol import audit_protocol

    return audit_protocol(spec, options)


# The verifier of every (kind, setting) (spec/setting.py, SETTINGS; tests/test_codebase.py
# checks that it covers every key).
VERIFIERS: dict[tuple[str, Setting], Verifier] = {
    ("multiparty", Setting.BITS): _bits,
    ("multiparty", Setting.SYMBOLS): _symbols,
    ("multiparty", Setting.DELTA): _delta,
    ("multiparty", Setting.DELTA_SYMBOLS): _delta_symbols,
    ("count", Setting.PURE): _count,
    ("count", Setting.DELTA): _count,
    ("protocol", Setting.BITS): _protocol,
    ("protocol", Setting.SYMBOLS): _protocol,
    ("protocol", Setting.DELTA): _protocol,
    ("protocol", Setting.DELTA_SYMBOLS): _protocol,
}


def _derive_pure(spec: MechanismSpec, tol: float) -> Any:
    """Pure alpha-DP: GS Theorem 2, exactly when alpha and every entry are exact, else in
    floating point with `tol`."""
    import numpy as np

    from dpverify.theory.count.geometric import as_exact_array
    from dpverify.theory.count.geometric import derive as derive_geometric

    if spec.exact and spec.alpha_exact is not None:
        return derive_geometric(as_exact_array(spec.matrix), spec.alpha_exact)
    x = np.array([[float(v) for v in row] for row in spec.matrix], dtype=np.float64)
    return derive_geometric(x, spec.alpha, tol)


def _derive_delta(spec: MechanismSpec, tol: float) -> Any:
    """delta > 0: (epsilon, delta) privacy and the consumers of two adjacent answers
    (verifiers/count/approximate.py)."""
    from dpverify.verifiers.count.approximate import delta_derivation

    return delta_derivation(spec, tol)


# What `derive` computes for a mechanism file of each setting.
DERIVATIONS: dict[tuple[str, Setting], Callable[[MechanismSpec, float], Any]] = {
    ("mechanism", Setting.PURE): _derive_pure,
    ("mechanism", Setting.DELTA): _derive_delta,
}


def derivation(spec: MechanismSpec, tol: float) -> Any:
    """`derive` of a mechanism file, by its setting: a Derivation (pure) or a
    DeltaDerivation (delta > 0)."""
    return DERIVATIONS[("mechanism", spec.setting)](spec, tol)


def _type(module: str, name: str) -> Callable[[], type]:
    """The class `name` of `module`, imported when first asked for (this module loads no
    verifier that a run does not use)."""
    return lambda: getattr(importlib.import_module(module), name)


_bits_result = _type("dpverify.verifiers.result", "AgentResult")
_symbols_result = _type("dpverify.verifiers.result", "SymbolResult")
_delta_result = _type("dpverify.verifiers.approximate.result", "ApproxResult")
_count_result = _type("dpverify.verifiers.count.result", "CountResult")
_audit_result = _type("dpverify.verifiers.audit.result", "AuditResult")
_mechanism_result = _type("dpverify.verifiers.audit.result", "MechanismResult")


# The type of the results of every (kind, setting), for reading them back from JSON
# (delta > 0 with more than two symbols is refused: it has no results).
RESULT_TYPES: dict[tuple[str, Setting], Callable[[], type] | None] = {
    ("multiparty", Setting.BITS): _bits_result,
    ("multiparty", Setting.SYMBOLS): _symbols_result,
    ("multiparty", Setting.DELTA): _delta_result,
    ("multiparty", Setting.DELTA_SYMBOLS): None,
    ("count", Setting.PURE): _count_result,
    ("count", Setting.DELTA): _count_result,
    ("protocol", Setting.BITS): _audit_result,
    ("protocol", Setting.SYMBOLS): _audit_result,
    ("protocol", Setting.DELTA): _audit_result,
    ("protocol", Setting.DELTA_SYMBOLS): None,
    ("mechanism", Setting.PURE): _mechanism_result,
    ("mechanism", Setting.DELTA): _mechanism_result,
}


def result_type(kind: str, setting: Setting) -> type:
    """The result class of a (kind, setting) (RESULT_TYPES)."""
    found = RESULT_TYPES[(kind, setting)]
    if found is None:
        raise ValueError(f"no results of kind {kind} in the setting {setting}")
    return found()


def read_result(data: dict[str, Any]) -> ProblemResult:
    """A problem's result object (docs/format.md) as a typed ProblemResult, each result
    by the type of its kind and setting: read_result(r.to_json()).to_json() == r.to_json()."""
    return ProblemResult.from_json(data, result_type)


def verify_spec(spec: Spec, options: VerifyOptions) -> ProblemResult:
    """Verify a loaded problem of any kind and setting."""
    return VERIFIERS[(spec.kind, spec.setting)](spec, options)


def verify_file(path: str | Path, options: VerifyOptions) -> ProblemResult:
    """Load and verify one problem file. SpecError / SizeLimitError propagate to the caller
    (dpverify.runner.files.verify_path turns them into results; find_problem_files finds
    the files under directories)."""
    return verify_spec(load(path), options)
