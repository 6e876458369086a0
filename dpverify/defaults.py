"""Option names and defaults, in one place and with no heavy imports.

The command line (`cli/options.py`), the Python API (`api.py`) and the verifiers
(`verifiers/options.py`) read them here, so a default means the same thing everywhere and
`dpverify --help` stays fast.
"""

from __future__ import annotations

import enum
from pathlib import Path


class Method(enum.StrEnum):
    """How a multi-party problem on bits is verified (docs/theory.md, "Methods"). `auto`
    chooses; the others are the routes themselves."""

    AUTO = "auto"
    LP = "lp"  # the relaxed corner LP against RR's decision LPs (two float computations)
    ORBIT = "orbit"  # the problem on symmetry orbits, with an exact orbit certificate
    PROOF = "proof"  # RR's exact certificate on all 2^k inputs, checked independently


class LpForm(enum.StrEnum):
    """How a family of product points enters an LP (docs/theory.md, the chain form)."""

    CHAIN = "chain"
    DENSE = "dense"


BACKENDS = ("highs", "cvxpy")  # LP backends (lp/solve.py dispatches on these names)
METHODS = tuple(m.value for m in Method)
LP_FORMS = tuple(f.value for f in LpForm)

DEFAULT_TOL = 1e-9  # the verdict tolerance, relative to the range of the gains
# Under a minute on a 2-core machine (benchmarks/bench_xor.py): observer XOR at k = 10
# (66,560 non-zeros) verifies both accuracies in ~17 s; k = 11 (141,312) takes ~96 s.
DEFAULT_MAX_NONZEROS = 70_000
# Exact work of the orbit method (theory/orbits/space.py: integer operations of the
# transforms, about orbits x sum of class sizes x columns): k = 1000 in one class with two
# outputs is about 6e6 (a few seconds); 5e7 is about half a minute on a 2-core machine.
DEFAULT_MAX_ORBIT_WORK = 50_000_000
DEFAULT_RESTARTS = 8  # random starts of the m-ary protocol search
DEFAULT_TIMEOUT = 600.0  # seconds per problem in a batch (and a sweep)
DEFAULT_STORE = Path(".dpverify") / "results.sqlite"
DEFAULT_CHECK_TOL = 1e-6  # `check --expect-tol`: the tolerance of an expected value
TEMPLATE_KINDS = ("multiparty", "count")  # what `dpverify new` writes
NAMED_GAINS = ("indicator", "-abs", "-square")  # the named gains of multi-party files
# `dpverify release`: the stage matrices are built exactly (about 3 s at n = 300); the
# limit of verifiers/count/release.py (tests/test_count_cli.py keeps the two equal)
MAX_RELEASE_N = 300
DEFAULT_WITNESS_DIR = Path(".dpverify") / "witnesses"
