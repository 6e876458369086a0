"""dpverify: verify optimality theorems in differential privacy.

The Python API (docs/api.md; dpverify/api.py), the same as the command line's
(every command calls the function of its name):

    import dpverify
    result = dpverify.verify(dpverify.load("problems/and-3.toml"))
    print(result.verdict)                      # optimal
    sweep = dpverify.sweep("problems/xor-4.toml", epsilon="0.1:4:40", jobs=2)
    sweep.plot("xor-4.png")                    # needs the plot extra: dpverify[plot]

Importing dpverify is fast: each name below is imported when first used. `batch` and
`sweep` may be called at a script's top level (their workers never re-run the script);
with `scheduler="local"` (Dask), put the call under `if __name__ == "__main__":`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dpverify.errors import (
    DpverifyError,
    InputError,
    OptionError,
    SizeLimitError,
    SolverError,
    SpecError,
)
from dpverify.version import __version__

if TYPE_CHECKING:
    from dpverify.api import (
        MechanismDerivation,
        VerifyKwargs,
        audit,
        audit_paths,
        batch,
        certify,
        certify_paths,
        check,
        check_cert,
        configuration,
        derive,
        examples,
        falsify,
        github_annotations,
        junit_xml,
        load,
        make_options,
        new,
        plot,
        plot_profile,
        plot_survey,
        privacy_profile,
        release,
        results,
        survey,
        sweep,
        verify,
        verify_paths,
    )
    from dpverify.problem import Agent, Consumer, Problem
    from dpverify.runner.batch import BatchItem, BatchResult
    from dpverify.runner.certify_files import CertificateRecord, Certification
    from dpverify.sweeps.run import Sweep, SweepPoint
    from dpverify.verifiers.count.verifier import CountResult
    from dpverify.verifiers.options import VerifyOptions
    from dpverify.verifiers.result import AgentResult, ProblemResult, Verdict

# The module that defines each name (imported on first use).
_MODULES = {
    "dpverify.api": ("load", "verify", "verify_paths", "certify", "certify_paths", "check_cert",
                     "audit", "audit_paths", "batch", "check", "results", "sweep", "plot",
                     "derive", "release", "new", "falsify", "survey", "privacy_profile",
                     "plot_profile", "plot_survey", "make_options", "VerifyKwargs",
                     "MechanismDerivation",
                     "junit_xml", "github_annotations", "configuration", "examples"),
    "dpverify.problem": ("Problem", "Agent", "Consumer"),
    "dpverify.verifiers.result": ("ProblemResult", "AgentResult", "Verdict"),
    "dpverify.verifiers.count.verifier": ("CountResult",),
    "dpverify.verifiers.options": ("VerifyOptions",),
    "dpverify.runner.batch": ("BatchResult", "BatchItem"),
    "dpverify.sweeps.run": ("Sweep", "SweepPoint"),
    "dpverify.runner.certify_files": ("Certification", "CertificateRecord"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = ["AgentResult", "Agent", "BatchItem", "BatchResult", "CertificateRecord",
           "Certification", "Consumer", "CountResult", "DpverifyError", "InputError",
           "MechanismDerivation", "OptionError", "Problem", "ProblemResult", "SizeLimitError",
           "SolverError", "SpecError", "Sweep", "SweepPoint", "Verdict", "VerifyKwargs",
           "VerifyOptions", "__version__", "audit", "audit_paths", "batch", "certify",
           "certify_paths", "check", "check_cert", "configuration", "derive", "examples",
           "falsify", "github_annotations", "junit_xml", "load", "make_options",
           "new", "plot", "plot_profile", "plot_survey", "privacy_profile", "release",
           "results", "survey", "sweep", "verify", "verify_paths"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dpverify' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
