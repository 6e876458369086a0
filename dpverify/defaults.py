"""Option names and defaults, in one place and with no heavy imports (the thresholds set
by measurement, some of them defaults, are in policy.py).

The command line (`cli/options.py`), the Python API (`api.py`) and the verifiers
(`verifiers/options.py`) read them here, so a default means the same thing everywhere and
`dpverify --help` stays fast.
"""

from __future__ import annotations

import enum
from pathlib import Path


class Method(enum.StrEnum):
    """How a result was decided, and (`auto`, `lp`, `orbit`, `proof`: `SELECTABLE`) how
    `--method` asks a multi-party problem on bits to be verified (docs/theory.md,
    "Methods"). `auto` chooses (verifiers/multiparty/planner.py); the others are the
    routes themselves. A result's `method` field holds one of these values."""

    AUTO = "auto"
    LP = "lp"  # the relaxed corner LP against RR's decision LPs (two float computations)
    ORBIT = "orbit"  # the problem on symmetry orbits, with an exact orbit certificate
    PROOF = "proof"  # RR's exact certificate on all 2^k inputs, checked independently
    RAYS = "rays"  # more than two symbols: the exact ray-product bound (results only)
    FOUR_RAY = "four-ray"  # delta > 0: the exact four-ray bound (results stored before)
    ENVELOPE = "envelope"  # delta > 0: the exact envelope bound (results only)


SELECTABLE = (Method.AUTO, Method.LP, Method.ORBIT, Method.PROOF)  # `--method` choices


class LpForm(enum.StrEnum):
    """How a family of product points enters an LP (docs/theory.md, the chain form).
    `auto` (the default) chooses by size: dense below `policy.DENSE_BELOW_PARTIES` parties when
    the dense LP fits `--max-nonzeros`, else chain (verifiers/multiparty/lps.py,
    `lp_form`); problems of other kinds take chain."""

    AUTO = "auto"
    CHAIN = "chain"
    DENSE = "dense"


class Backend(enum.StrEnum):
    """The LP backends (lp/solve.py dispatches on their names): HiGHS through highspy, the
    default; cvxpy (through HiGHS too), a cross-check."""

    HIGHS = "highs"
    CVXPY = "cvxpy"


BACKENDS = tuple(b.value for b in Backend)
METHODS = tuple(m.value for m in SELECTABLE)
LP_FORMS = tuple(f.value for f in LpForm)

DEFAULT_TOL = 1e-9  # the verdict tolerance, relative to the range of the gains
# Figures (plotting.py): `screen` (the default) or `paper` (a 3.3 in journal column)
PLOT_STYLES = ("screen", "paper")
DEFAULT_RESTARTS = 8  # random starts of the m-ary protocol search
DEFAULT_TIMEOUT = 600.0  # seconds per problem in a batch (and a sweep)
DEFAULT_STORE = Path(".dpverify") / "results.sqlite"
MEMORY_STORE = ":memory:"  # `--no-store`: a results store in memory for one run, never saved
DEFAULT_CHECK_TOL = 1e-6  # `check --expect-tol`: the tolerance of an expected value
TEMPLATE_KINDS = ("multiparty", "count")  # what `dpverify new` writes
NAMED_GAINS = ("indicator", "-abs", "-square")  # the named gains of multi-party files
DEFAULT_WITNESS_DIR = Path(".dpverify") / "witnesses"
