"""The LP data type shared by every backend (numpy / scipy.sparse, no solver objects)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


class LpStatus(enum.StrEnum):
    """dpverify's own solver statuses; each backend maps its solver's statuses to these."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIME_LIMIT = "time-limit"
    ERROR = "error"
    UNKNOWN = "unknown"


@dataclass(frozen=True, eq=False)
class LinearProgram:
    """optimise c @ x subject to row_lower <= A @ x <= row_upper, col_lower <= x <= col_upper.

    Infinite bounds are +-inf. `maximize` selects the sense.
    """

    c: np.ndarray
    A: sp.csc_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    maximize: bool = True
    name: str = "lp"
    solver: str = ""  # a hint for backends that have several algorithms: "simplex" or "ipm"
    # True when the caller only takes hints from the solution (its bounds are checked
    # apart): entries a backend cannot keep are then dropped instead of refused
    drop_tiny: bool = False

    def __post_init__(self) -> None:
        m, n = self.A.shape
        if self.c.shape != (n,) or self.col_lower.shape != (n,) or self.col_upper.shape != (n,):
            raise ValueError(f"LP {self.name}: column arrays must have length {n}")
        if self.row_lower.shape != (m,) or self.row_upper.shape != (m,):
            raise ValueError(f"LP {self.name}: row arrays must have length {m}")

    @property
    def num_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def num_cols(self) -> int:
        return int(self.A.shape[1])

    @property
    def nnz(self) -> int:
        return int(self.A.nnz)


@dataclass(frozen=True, eq=False)
class LpSolution:
    """A backend's answer.

    `row_duals` use one convention for every backend and sense: the rate of change of the
    optimal objective when a row's active bound is relaxed upward (d objective / d b).
    So for a maximisation, duals of `A x <= b` rows are >= 0 and of `A x >= b` rows <= 0.
    """

    status: LpStatus
    objective: float
    x: np.ndarray
    row_duals: np.ndarray
    seconds: float
    backend: str
    message: str = ""
    # HiGHS only: which columns are basic in the optimal basis (None when unknown)
    basic_columns: np.ndarray | None = None

    @property
    def optimal(self) -> bool:
        return self.status is LpStatus.OPTIMAL
