"""Count-query problems (`kind = "count"`) as frozen dataclasses (spec.md is the contract).

Gupte-Sundararajan minimax consumers and Ghosh-Roughgarden-Sundararajan Bayesian
consumers of a count query with answers 0..n (theory.md section 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from dpverify.spec.model import Expectation

MODELS = ("minimax", "bayes")
NAMED_LOSSES = ("abs", "square", "indicator")


@dataclass(frozen=True)
class LossDef:
    """The consumer's loss l(i, r) (minimised): `kind` is "named", "expr" or "matrix".

    named: `name` is abs, square or indicator; expr: `text` is a safe expression over
    i, r and n; matrix: `matrix[i][r]` exact, (n+1) x (n+1).
    """

    kind: str
    name: str = ""
    text: str = ""
    matrix: tuple[tuple[Fraction, ...], ...] = ()

    def describe(self) -> str:
        if self.kind == "named":
            return self.name
        if self.kind == "expr":
            return f"expr {self.text!r}"
        return "matrix"


@dataclass(frozen=True, eq=False)
class CountSpec:
    """A count-query problem: answers 0..n, privacy alpha = e^-epsilon in [0, 1], one
    consumer. `alpha_exact` is set when the privacy level is an exact rational (given
    through `alpha`, or epsilon = 0); `epsilon_exact` when given through `epsilon`.
    `side_information` is the sorted set S; `prior` (bayes only) is normalised exactly.
    """

    name: str
    description: str
    source: str
    n: int
    alpha: float
    alpha_exact: Fraction | None
    epsilon_exact: Fraction | None
    loss: LossDef
    side_information: tuple[int, ...]
    model: str
    prior: tuple[Fraction, ...] | None = None
    expect: tuple[Expectation, ...] = ()
    tables: dict = field(default_factory=dict, repr=False)  # cache: the tabulated loss

    kind = "count"

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must be >= 0: {self.n}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1]: {self.alpha}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}: {self.model!r}")
        if not self.side_information or not all(0 <= i <= self.n
                                                for i in self.side_information):
            raise ValueError(f"side information must be a non-empty subset of 0..{self.n}")
        if (self.model == "bayes") != (self.prior is not None):
            raise ValueError("a prior is given exactly when model = 'bayes'")

    @property
    def accuracy(self) -> str:
        """`minimax` or `bayes`: the result's `accuracy` field."""
        return self.model

    @property
    def full_side_information(self) -> bool:
        return len(self.side_information) == self.n + 1


@dataclass(frozen=True, eq=False)
class MechanismSpec:
    """An explicit oblivious mechanism x[i, r] for `dpverify derive` (GS Theorem 2).

    `exact` is True when every comparison can be made in exact arithmetic: alpha is an
    exact rational and no matrix entry was written as a TOML float (floats are usually
    rounded decimals, so they are compared with a tolerance instead).
    """

    name: str
    description: str
    source: str
    n: int
    alpha: float
    alpha_exact: Fraction | None
    epsilon_exact: Fraction | None
    matrix: tuple[tuple[Fraction, ...], ...]
    exact: bool
