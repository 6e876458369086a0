"""Why a result is what it is, as a code beside its words (issue 24: typed results): every
result that carries a prose `reason` carries a `reason_code` too, in the JSON as well
(docs/format.md, `reason_code`), so that a script, a test or a table can tell the cases
apart without matching words.

No imports beyond the standard library: the base of docs/architecture.md.
"""

from __future__ import annotations

import enum

__all__ = ["ReasonCode"]


class ReasonCode(enum.StrEnum):
    """What a reason says, by kind. The words around it give the numbers and the limits."""

    # decided by an exact certificate, checked independently
    PROVED = "proved"  # the certificate proves the optimum exactly
    BRACKETED = "bracketed"  # its bracket holds the optimum within --tol
    # findings, each confirmed exactly
    GAP = "gap"  # a protocol (or mechanism) beats the candidate, exactly
    WITNESS_ABOVE_BOUND = "witness-above-bound"  # an exact witness above an exact bound:
    # it contradicts the theorem and the certificate (a bug, reported loudly)
    INTERACTION_HELPS = "interaction-helps"  # an interactive protocol beats RR(eps, delta)
    SUBOPTIMAL = "suboptimal"  # an audited protocol is private but below the bound
    NOT_PRIVATE = "not-private"  # an audited protocol misses a claimed privacy level
    CONTRADICTION = "contradiction"  # a protocol beats the bound at its own levels (a bug)
    # undecided
    OPEN = "open"  # the optimum lies between the best protocol found and the bound
    BRACKET_TOO_WIDE = "bracket-too-wide"  # the exact (or rigorous) bracket is wider than
    # --tol, or a float difference is not confirmed exactly
    CHECK_FAILED = "check-failed"  # a certificate fails the independent check (a bug)
    NO_CERTIFICATE = "no-certificate"  # no exact certificate: a limit or a solver failure
    SOLVER_FAILED = "solver-failed"  # an LP did not solve, and nothing exact replaced it
    NUMERICAL = "numerical"  # the floats contradict each other or their own proof
    NOT_EXACT = "not-exact"  # a value that needs exact arithmetic could not be had exactly
    CROSS_CHECK_DISAGREES = "cross-check-disagrees"  # --cross-check: two routes disagree
    BUG = "bug"  # an impossible outcome (please report it)
    BOUND_UNDECIDED = "bound-undecided"  # the bound a value is compared with is undecided
    # refused before any result, or not run to the end
    SIZE_LIMIT = "size-limit"  # over a size limit (--max-nonzeros, --max-orbit-work, ...)
    TIMEOUT = "timeout"  # the run's time limit (--timeout)
    INVALID = "invalid"  # not a valid problem file (bad input)
    REFUSED = "refused"  # refused before any result for another reason (the words say)
    WORKER_FAILED = "worker-failed"  # a batch worker died, ran out of memory, was lost
    INTERNAL = "internal"  # an internal error (a bug in dpverify)
    # said of a decided result (a note beside the verdict)
    NOTE = "note"  # the verdict stands; the reason adds what else is known
