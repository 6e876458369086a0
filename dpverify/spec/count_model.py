"""Count-query problems (`kind = "count"`) as frozen dataclasses (spec.md is the contract).

Gupte-Sundararajan minimax consumers and Ghosh-Roughgarden-Sundararajan Bayesian
consumers of a count query with answers 0..n (theory.md section 2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from dpverify.spec.model import Expectation, Kind
from dpverify.spec.setting import Setting, count_setting

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


class Model(enum.StrEnum):
    """The consumer's model: a minimax (GS) or a Bayesian (GRS) consumer."""

    MINIMAX = "minimax"
    BAYES = "bayes"


MODELS = tuple(m.value for m in Model)


@dataclass(frozen=True, eq=False)
class CountPrivacy:
    """What every count-query file states: its name, the answers 0..n, and the privacy
    level alpha = e^-epsilon in [0, 1] (GS Definition 2). `alpha_exact` is set when the
    level is an exact rational (given through `alpha`, or epsilon = 0); `epsilon_exact`
    when given through `epsilon`."""

    name: str
    description: str
    source: str
    n: int
    alpha: float
    alpha_exact: Fraction | None
    epsilon_exact: Fraction | None
    # approximate privacy (docs/theory.md, "Approximate privacy"): (epsilon, delta)-DP
    # between adjacent answers; 0 is pure epsilon-DP (GS Definition 2)
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must be >= 0: {self.n}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1]: {self.alpha}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"delta must lie in [0, 1): {self.delta}")

    @property
    def approximate(self) -> bool:
        """Whether the privacy is approximate, (epsilon, delta) with delta > 0."""
        return self.delta > 0

    @property
    def setting(self) -> Setting:
        """Pure alpha-DP or delta > 0 (spec/setting.py)."""
        return count_setting(self.approximate)


@dataclass(frozen=True, eq=False)
class CountSpec(CountPrivacy):
    """A count-query problem: one consumer of the answers 0..n. `side_information` is the
    sorted set S; `prior` (bayes only) is normalised exactly."""

    loss: LossDef = LossDef("named", "abs")
    side_information: tuple[int, ...] = ()
    model: Model = Model.MINIMAX
    prior: tuple[Fraction, ...] | None = None
    expect: tuple[Expectation, ...] = ()

    kind: ClassVar[Kind] = Kind.COUNT

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}: {str(self.model)!r}")
        if not self.side_information or not all(0 <= i <= self.n
                                                for i in self.side_information):
            raise ValueError(f"side information must be a non-empty subset of 0..{self.n}")
        if (self.model == Model.BAYES) != (self.prior is not None):
            raise ValueError("a prior is given exactly when model = 'bayes'")

    @property
    def accuracy(self) -> str:
        """`minimax` or `bayes`: the result's `accuracy` field."""
        return str(self.model)

    def header(self) -> dict[str, object]:
        """The fields a result object of this problem carries before its results
        (docs/format.md): n and alpha, and the delta (an exact string) when it is > 0."""
        from dpverify.spec.numbers import rational_text

        out: dict[str, object] = {"n": self.n, "alpha": self.alpha}
        if self.approximate:
            out["delta"] = rational_text(self.delta)
        return out

    @property
    def full_side_information(self) -> bool:
        return len(self.side_information) == self.n + 1


@dataclass(frozen=True, eq=False)
class MechanismSpec(CountPrivacy):
    """An explicit oblivious mechanism x[i, r] for `dpverify derive` (GS Theorem 2).

    `exact` is True when every comparison can be made in exact arithmetic: alpha is an
    exact rational and no matrix entry was written as a TOML float (floats are usually
    rounded decimals, so they are compared with a tolerance instead).
    """

    matrix: tuple[tuple[Fraction, ...], ...] = ()
    exact: bool = False
    float_entries: bool = False  # some entry was a TOML float (a rounded decimal)
