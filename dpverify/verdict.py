"""Verdicts, in one place: what each means for the exit status, how they rank, and the
categories a run counts (a verdict, or a file that is invalid, or a bug met while it was
verified). The exit-status rule (status.py), the counts and summaries every command
prints (console/), and a problem's verdict as the worst of its results are all derived
from here.

No imports beyond the standard library: the base of docs/architecture.md.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = ["Category", "ExitClass", "Verdict", "category_of", "worst_verdict"]


class ExitClass(enum.Enum):
    """What a verdict means for the exit status (status.py): as claimed (0), a finding
    against the claim (1), undecided (3)."""

    AS_CLAIMED = "as-claimed"
    FINDING = "finding"
    UNDECIDED = "undecided"


class Verdict(enum.StrEnum):
    """A result's verdict. In the order the summaries list them (the first of each exit
    class always, the others when they occur); `rank` orders them from best to worst."""

    OPTIMAL = "optimal"
    GAP = "gap"
    ERROR = "error"
    # protocol audits (verifiers/audit/protocol.py): below the bound but private (the
    # normal case, yet a finding against a claim of optimality: exit status 1); misses a
    # claimed privacy level; beats the bound at its own levels (a bug)
    SUBOPTIMAL = "suboptimal"
    NOT_PRIVATE = "not-private"
    CONTRADICTION = "contradiction"
    # approximate privacy (verifiers/approximate/): an exactly private interactive protocol
    # beats every non-interactive one, RR(epsilon, delta) (a finding: exit status 1)
    INTERACTION_HELPS = "interaction-helps"
    # inputs with more than two symbols (verifiers/multisymbol/verifier.py): the optimum
    # lies strictly between the best protocol found and the bound; whether m-ary RR is
    # optimal is not decided (exit status 3, with `error`)
    OPEN = "open"

    @property
    def exit_class(self) -> ExitClass:
        return _EXIT_CLASS[self]

    @property
    def rank(self) -> int:
        """Best (0) to worst: optimal < suboptimal < gap < interaction-helps < not-private
        < contradiction < open < error (`open` ranks with the undecided, below `error`)."""
        return _RANK[self]

    @property
    def always_counted(self) -> bool:
        """Whether a summary always counts it (the first verdict of its exit class, in
        definition order: optimal, gap, error), even at zero."""
        return next(v for v in Verdict if v.exit_class is self.exit_class) is self

    @classmethod
    def of(cls, text: object) -> Verdict:
        """A result object's verdict as a Verdict (`error` for anything unknown)."""
        try:
            return cls(str(text))
        except ValueError:
            return cls.ERROR


_EXIT_CLASS = {Verdict.OPTIMAL: ExitClass.AS_CLAIMED,
               Verdict.GAP: ExitClass.FINDING, Verdict.SUBOPTIMAL: ExitClass.FINDING,
               Verdict.NOT_PRIVATE: ExitClass.FINDING, Verdict.CONTRADICTION: ExitClass.FINDING,
               Verdict.INTERACTION_HELPS: ExitClass.FINDING,
               Verdict.ERROR: ExitClass.UNDECIDED, Verdict.OPEN: ExitClass.UNDECIDED}
_RANK = {Verdict.OPTIMAL: 0, Verdict.SUBOPTIMAL: 1, Verdict.GAP: 2,
         Verdict.INTERACTION_HELPS: 3, Verdict.NOT_PRIVATE: 4, Verdict.CONTRADICTION: 5,
         Verdict.OPEN: 6, Verdict.ERROR: 7}


def worst_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """A problem's verdict is the worst of its results (by `rank`; `optimal` when there
    are none)."""
    return max(verdicts, key=lambda v: v.rank, default=Verdict.OPTIMAL)


class Category(enum.StrEnum):
    """What a run counts for each file: its verdict, or `invalid` (not a valid problem
    file: bad input, exit 2), or `internal` (a bug met while it was verified, exit 4)."""

    OPTIMAL = "optimal"
    GAP = "gap"
    ERROR = "error"
    SUBOPTIMAL = "suboptimal"
    NOT_PRIVATE = "not-private"
    CONTRADICTION = "contradiction"
    INTERACTION_HELPS = "interaction-helps"
    OPEN = "open"
    INVALID = "invalid"
    INTERNAL = "internal"

    @property
    def verdict(self) -> Verdict | None:
        """The verdict it counts (None for invalid and internal)."""
        return Verdict(self.value) if self.value in Verdict._value2member_map_ else None


def category_of(verdict: Verdict | str, *, invalid: bool = False,
                internal: bool = False) -> Category:
    """The one category rule: `invalid` for a file that is not a valid problem, `internal`
    for a bug met while it was verified, else the verdict."""
    if invalid:
        return Category.INVALID
    if internal:
        return Category.INTERNAL
    return Category(Verdict.of(verdict).value)
