"""Option names and defaults, in one place and with no heavy imports.

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
    "Methods"). `auto` chooses (verifiers/multiparty/methods.py); the others are the
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
    `auto` (the default) chooses by size: dense below `DENSE_BELOW_PARTIES` parties when
    the dense LP fits `--max-nonzeros`, else chain (verifiers/multiparty/lps.py,
    `lp_form`); problems of other kinds take chain."""

    AUTO = "auto"
    CHAIN = "chain"
    DENSE = "dense"


BACKENDS = ("highs", "cvxpy")  # LP backends (lp/solve.py dispatches on these names)
METHODS = tuple(m.value for m in SELECTABLE)
LP_FORMS = tuple(f.value for f in LpForm)
# `--method auto` (and `certify`): RR's exact certificate on all 2^k inputs is the first
# route up to this many parties for every problem; beyond, a problem that the orbit
# method reduces is proved on its orbits first (measured: verifiers/multiparty/certify.py,
# certificate_routes), one without symmetry on all inputs while they can be tabulated
# (spec/tables.py, MAX_TABULATED_PARTIES)
ALL_INPUTS_PARTIES = 8
# `--lp-form auto`: the dense corner LP below this many parties, when it fits
# (benchmarks/bench_forms.py on a 2-core machine: up to k = 8 the dense form solves a
# party's `sum` under -abs 1.2 to 3 times faster than chain, a random table about as fast
# or up to 1.7 times faster; from k = 9 on chain's O(k 2^k) non-zeros win)
DENSE_BELOW_PARTIES = 9

DEFAULT_TOL = 1e-9  # the verdict tolerance, relative to the range of the gains
# Figures (plotting.py): `screen` (the default) or `paper` (a 3.3 in journal column)
PLOT_STYLES = ("screen", "paper")
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
MEMORY_STORE = ":memory:"  # `--no-store`: a results store in memory for one run, never saved
DEFAULT_CHECK_TOL = 1e-6  # `check --expect-tol`: the tolerance of an expected value
TEMPLATE_KINDS = ("multiparty", "count")  # what `dpverify new` writes
NAMED_GAINS = ("indicator", "-abs", "-square")  # the named gains of multi-party files
# `dpverify release`: the stage matrices are built exactly (about 3 s at n = 300); the
# limit of verifiers/count/release.py (tests/test_count_cli.py keeps the two equal)
MAX_RELEASE_N = 300
DEFAULT_WITNESS_DIR = Path(".dpverify") / "witnesses"
