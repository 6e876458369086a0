"""Entry points for one problem: load a file, dispatch on its kind, return a ProblemResult."""

from __future__ import annotations

from pathlib import Path

from dpverify.spec import load
from dpverify.verify.options import VerifyOptions
from dpverify.verify.result import ProblemResult


def verify_spec(spec, options: VerifyOptions) -> ProblemResult:
    if spec.kind == "count":
        from dpverify.verify.count import verify_count

        return verify_count(spec, options)
    from dpverify.verify.multiparty import verify_multiparty

    return verify_multiparty(spec, options)


def verify_file(path: str | Path, options: VerifyOptions) -> ProblemResult:
    """Load and verify one problem file. SpecError / SizeLimitError propagate to the caller
    (dpverify.verify.paths.verify_path turns them into results; find_problem_files finds
    the files under directories)."""
    return verify_spec(load(path), options)
