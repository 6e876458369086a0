"""The exit status of every command (spec.md, "Exit status of every command").

One function decides it, from counts of what happened, so that `verify`, `batch`, `check`,
`certify`, `check-cert`, `derive` and `release` can never disagree about precedence:
bad input outranks "could not decide", which outranks a failure (a gap, a mismatch, an
unproved certificate), which outranks success.
"""

from __future__ import annotations

import enum
import signal
from collections import Counter
from collections.abc import Iterable


class ExitStatus(enum.IntEnum):
    OK = 0  # every verdict optimal (and every expectation met, every check passed)
    FAILED = 1  # a gap, an expectation mismatch, an unproved certificate, a failed check
    BAD_INPUT = 2  # a problem file or a command line is invalid
    UNDECIDED = 3  # could not decide: a solver failure, a time or size limit
    INTERRUPTED = 130  # Ctrl-C: the shell's convention for SIGINT (128 + 2)
    BROKEN_PIPE = 128 + signal.SIGPIPE  # stdout was closed (`... | head -1`): 141


def exit_status(*, invalid: int = 0, undecided: int = 0, failed: int = 0,
                interrupted: bool = False) -> ExitStatus:
    """The exit status for a run with these counts (any non-zero count counts)."""
    if interrupted:
        return ExitStatus.INTERRUPTED
    if invalid:
        return ExitStatus.BAD_INPUT
    if undecided:
        return ExitStatus.UNDECIDED
    if failed:
        return ExitStatus.FAILED
    return ExitStatus.OK


# Categories that fail a run (exit status 1): a gap, and the protocol audit's not-private
# and contradiction; `suboptimal` (an audited protocol below the bound) only when optimality
# is required (`audit --require-optimal`).
FAILED_CATEGORIES = ("gap", "not-private", "contradiction")
# Categories that could not be decided (exit status 3): an `error`, and `open` (inputs with
# more than two symbols whose optimum lies strictly between the best protocol found and the
# bound: whether m-ary randomized response is optimal is not decided).
UNDECIDED_CATEGORIES = ("error", "open")


def verdict_status(categories: Iterable[str], *, interrupted: bool = False,
                   require_optimal: bool = False) -> ExitStatus:
    """The exit status for problems in these categories: a verdict (`optimal`,
    `suboptimal`, `gap`, `not-private`, `contradiction`, `open` or `error`: could not
    decide) or `invalid` (not a valid problem file)."""
    counts = Counter(categories)
    failed = sum(counts[c] for c in FAILED_CATEGORIES)
    if require_optimal:
        failed += counts["suboptimal"]
    return exit_status(invalid=counts["invalid"],
                       undecided=sum(counts[c] for c in UNDECIDED_CATEGORIES),
                       failed=failed, interrupted=interrupted)
