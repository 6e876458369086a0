"""Problem specifications as frozen dataclasses (spec.md is the contract they implement)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dpverify.spec.functions import written

if TYPE_CHECKING:
    from dpverify.spec.setting import Setting


class Kind(enum.StrEnum):
    """The problem kinds (`problem.kind` in a file)."""

    MULTIPARTY = "multiparty"
    COUNT = "count"
    PROTOCOL = "protocol"


class Accuracy(enum.StrEnum):
    AVERAGE = "average"
    WORST = "worst"


@dataclass(frozen=True)
class FunctionDef:
    """What an agent computes: `kind` is "named", "expr", "table" or "counts".

    named: `name` as spec/functions.py names it, with `param` (t, i or q);
    expr: `text` is a safe expression; table: `values` in input order; counts: `values`
    F(0), ..., F(k), the value at each number of ones.
    """

    kind: str
    name: str = ""
    param: int = 0
    text: str = ""
    values: tuple[Fraction, ...] = ()

    def describe(self) -> str:
        if self.kind == "named":
            return written(self.name, self.param)
        if self.kind == "expr":
            return f"expr {self.text!r}"
        return "table" if self.kind == "table" else "counts"


@dataclass(frozen=True)
class GainDef:
    """The accuracy measure w(f, y) (maximised): named, expr over f and y, or a matrix."""

    kind: str  # "named", "expr" or "matrix"
    name: str = ""  # indicator, -abs, -square
    text: str = ""
    matrix: tuple[tuple[Fraction, ...], ...] = ()

    def describe(self) -> str:
        return self.name if self.kind == "named" else self.kind


@dataclass(frozen=True)
class AgentSpec:
    """The observer (party = 0) or party i (1-based); `key` is its path in the file."""

    party: int
    function: FunctionDef
    gain: GainDef
    outputs: tuple[Fraction, ...] | None  # None: the sorted distinct function values
    key: str

    @property
    def name(self) -> str:
        """`observer` or `party:i`, as in spec.md's results."""
        return "observer" if self.party == 0 else f"party:{self.party}"


@dataclass(frozen=True, eq=False)
class AgentTable:
    """An agent's function and gain tabulated over the 2^k inputs (input order, x1 MSB).

    `gain_exact[x][j] = w(f(x), outputs[j])` as exact rationals; `gain` is the same as floats.
    """

    values: tuple[Fraction, ...]
    outputs: tuple[Fraction, ...]
    gain_exact: tuple[tuple[Fraction, ...], ...]
    gain: np.ndarray


# `gap`: a shipped counterexample to a theorem's hypotheses (the count gap, or m-ary RR
# beaten by a witness); `suboptimal` and `not-private`: an audited protocol (kind =
# "protocol") below the bound, or one that misses its claimed privacy level; `open`: an
# instance with more than two symbols whose optimum lies strictly between the best
# protocol found and the bound; each kept under regression as such.
EXPECTABLE_VERDICTS = ("optimal", "gap", "suboptimal", "not-private", "open")


@dataclass(frozen=True)
class Expectation:
    """An `[expect]` entry: the value `dpverify check` compares with, and the verdict the
    result must have (`optimal` unless the table says otherwise: `verdict = "gap"` for a
    shipped counterexample outside a theorem's hypotheses, `suboptimal` or `not-private`
    for an audited protocol)."""

    agent: str
    accuracy: str
    value: float
    verdict: str = "optimal"


@dataclass(frozen=True, eq=False)
class MultipartySpec:
    """A multi-party problem (Kairouz-Oh-Viswanath). `lambdas_exact` is set when every
    privacy level was given through `lambda` (exact rationals); `epsilons_exact` when
    given through `epsilon`. Validates itself: a spec built in code obeys the same rules
    as one loaded from a file (the loader's messages are friendlier)."""

    name: str
    description: str
    source: str
    parties: int
    lambdas: tuple[float, ...]
    lambdas_exact: tuple[Fraction, ...] | None
    epsilons_exact: tuple[Fraction, ...] | None
    accuracies: tuple[Accuracy, ...]
    agents: tuple[AgentSpec, ...]
    expect: tuple[Expectation, ...] = ()
    # input symbols per party (docs/format.md, "More than two symbols"); () means bits
    alphabets: tuple[int, ...] = ()
    # approximate privacy (KOV eq. 12): delta_i per party, in [0, 1); () means all 0
    deltas: tuple[Fraction, ...] = ()

    kind: ClassVar[Kind] = Kind.MULTIPARTY

    def __post_init__(self) -> None:
        k = self.parties
        if k < 1:
            raise ValueError(f"parties must be >= 1: {k}")
        if not self.alphabets:
            object.__setattr__(self, "alphabets", (2,) * k)
        if len(self.alphabets) != k or any(m < 2 for m in self.alphabets):
            raise ValueError(f"alphabets must be {k} sizes >= 2: {self.alphabets}")
        if not self.deltas:
            object.__setattr__(self, "deltas", (Fraction(0),) * k)
        if len(self.deltas) != k or any(not 0 <= d < 1 for d in self.deltas):
            raise ValueError(f"deltas must be {k} numbers in [0, 1): {self.deltas}")
        if len(self.lambdas) != k or any(not lam >= 1 for lam in self.lambdas):
            raise ValueError(f"lambdas must be {k} numbers >= 1: {self.lambdas}")
        if (self.lambdas_exact is None) == (self.epsilons_exact is None):
            raise ValueError("exactly one of lambdas_exact and epsilons_exact is set")
        exact = self.lambdas_exact if self.lambdas_exact is not None else self.epsilons_exact
        if exact is None or len(exact) != k:
            raise ValueError(f"the exact privacy levels must have {k} entries")
        if not self.accuracies or not self.agents:
            raise ValueError("a problem needs at least one accuracy and one agent")
        parties = [a.party for a in self.agents]
        if len(set(parties)) != len(parties) or not all(0 <= p <= k for p in parties):
            raise ValueError(f"agents must be distinct, the observer (0) or parties 1..{k}: "
                             f"{parties}")

    @property
    def approximate(self) -> bool:
        """Whether some party's privacy is approximate, (epsilon, delta) with delta > 0."""
        return any(self.deltas)

    @property
    def binary(self) -> bool:
        """Whether every party holds a bit (the setting of KOV Theorem 3.1)."""
        return all(m == 2 for m in self.alphabets)

    @property
    def setting(self) -> Setting:
        """Bits, more symbols, delta > 0, or both (spec/setting.py): what the verifier,
        the certificate and the view are chosen by (lazily: not in the checker's base)."""
        from dpverify.spec.setting import multiparty_setting

        return multiparty_setting(self.binary, self.approximate)

    def header(self) -> dict[str, object]:
        """The fields a result object of this problem carries (spec/setting.py)."""
        from dpverify.spec.setting import multiparty_header

        return multiparty_header(self)

    @property
    def num_inputs(self) -> int:
        return 1 << self.parties if self.binary else math.prod(self.alphabets)
