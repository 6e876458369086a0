"""The exit status of every command (spec.md, "Exit status of every command").

One rule for every command: 0 every verdict as claimed (`optimal`); 1 a finding against
the claim (`gap`, `suboptimal`, `not-private`, `contradiction`, `interaction-helps`, an
expectation mismatch, an unproved certificate, a counterexample); 2 bad input; 3 undecided
(`open`, `error`, a refusal, a solver failure, a limit); 4 an internal error (a bug).
Over many results one status wins, in the order 4, 2, 3, 1, 0; an interrupted run is 130
whatever else happened, and a closed stdout 141.

One function decides it, from counts of what happened, so that no two commands can
disagree about precedence.
"""

from __future__ import annotations

import enum
import signal
from collections import Counter
from collections.abc import Iterable

from dpverify.verdict import Category, ExitClass, Verdict


class ExitStatus(enum.IntEnum):
    OK = 0  # every verdict as claimed (optimal; every expectation met, every check passed)
    FAILED = 1  # a finding against the claim: a gap, suboptimal, not-private, a mismatch, ...
    BAD_INPUT = 2  # a problem file or a command line is invalid
    UNDECIDED = 3  # could not decide: open, error, a refusal, a solver failure, a limit
    INTERNAL = 4  # an internal error: a bug in dpverify (please report it)
    INTERRUPTED = 130  # Ctrl-C: the shell's convention for SIGINT (128 + 2)
    BROKEN_PIPE = 128 + signal.SIGPIPE  # stdout was closed (`... | head -1`): 141


# The one sentence every command's --help ends with (cli/__init__.py), and docs/format.md.
# Its list of findings is not exhaustive (`interaction-helps` is one, FAILED_CATEGORIES):
# a help text wraps a hyphenated word at its hyphen.
EXIT_STATUS_RULE = (
    "Exit status: 0 every verdict as claimed (optimal); 1 a finding against the claim "
    "(gap, suboptimal, not-private, contradiction, a mismatch); 2 bad input; 3 undecided "
    "(open, error, refused); 4 an internal error (a bug); over many results the first of "
    "4, 2, 3, 1, 0 wins; 130 interrupted; 141 stdout closed.")


def exit_status(*, internal: int = 0, invalid: int = 0, undecided: int = 0, failed: int = 0,
                interrupted: bool = False) -> ExitStatus:
    """The exit status for a run with these counts (any non-zero count counts): 130 when
    interrupted, else the first of 4, 2, 3, 1, 0 that applies."""
    if interrupted:
        return ExitStatus.INTERRUPTED
    if internal:
        return ExitStatus.INTERNAL
    if invalid:
        return ExitStatus.BAD_INPUT
    if undecided:
        return ExitStatus.UNDECIDED
    if failed:
        return ExitStatus.FAILED
    return ExitStatus.OK


# Verdicts that are findings against the claim (exit status 1): a gap; the protocol audit's
# suboptimal (private but below the bound), not-private and contradiction; and
# interaction-helps (approximate privacy: an interactive protocol beats RR). Categories
# that could not be decided (exit status 3): an `error`, and `open` (inputs with more than
# two symbols whose optimum lies strictly between the best protocol found and the bound).
# Both derived from the verdicts' exit classes (dpverify/verdict.py).
FAILED_CATEGORIES = tuple(v.value for v in Verdict if v.exit_class is ExitClass.FINDING)
UNDECIDED_CATEGORIES = tuple(v.value for v in Verdict if v.exit_class is ExitClass.UNDECIDED)


def verdict_status(categories: Iterable[str], *, interrupted: bool = False) -> ExitStatus:
    """The exit status for problems in these categories (dpverify/verdict.py, Category): a
    verdict, by its exit class; `invalid` (not a valid problem file) or `internal` (a bug
    met while the problem was verified, as a batch worker reports it)."""
    counts = Counter(str(c) for c in categories)
    return exit_status(internal=counts[Category.INTERNAL], invalid=counts[Category.INVALID],
                       undecided=sum(counts[c] for c in UNDECIDED_CATEGORIES),
                       failed=sum(counts[c] for c in FAILED_CATEGORIES),
                       interrupted=interrupted)


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` says the memory a run asked for cannot be had: a MemoryError, or
    numpy's ValueError for an array whose size does not fit an index ("array is too big",
    "Maximum allowed size exceeded": a limit raised far past what the machine holds)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, ValueError) and (
        "array is too big" in text or "Maximum allowed size exceeded" in text)
