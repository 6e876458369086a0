"""The LP data type shared by every backend (numpy arrays, no solver objects).

The constraint matrix is a `CscMatrix`: compressed sparse columns in three numpy arrays,
what HiGHS takes as it is. It is not scipy.sparse, so that a verification whose route
needs no scipy does not import it (issue 25: start-up); `to_scipy` converts on demand
(the cvxpy backend), and a scipy matrix given to `LinearProgram` is converted.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from dpverify.records import record

# The least scale by which an LP's column is divided (a column scaled to its largest entry):
# HiGHS refuses an LP with an entry of 1e15 or more (the scaled orbit rule's LP,
# theory/worst_polish.rule_lp, and the count pair's polish, verifiers/count/lps.py)
COLUMN_SCALE_FLOOR = 1e-9


@record(eq=False)
class CscMatrix:
    """A sparse matrix in compressed sparse columns: the row indices and values of column
    j are indices[indptr[j]:indptr[j+1]] and data[...], rows sorted, no duplicates."""

    shape: tuple[int, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray

    @classmethod
    def from_coo(cls, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                 shape: tuple[int, int]) -> CscMatrix:
        """From triplets: duplicates summed, zeros (given or summed) left out."""
        m, n = int(shape[0]), int(shape[1])
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.asarray(vals, dtype=np.float64)
        keys = cols * max(m, 1) + rows  # column-major: sorted keys are CSC order
        unique, inverse = np.unique(keys, return_inverse=True)
        summed = np.bincount(inverse.ravel(), weights=vals, minlength=unique.size)
        keep = summed != 0.0
        unique, summed = unique[keep], summed[keep]
        col_of = unique // max(m, 1)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(col_of, minlength=n))])
        return cls((m, n), summed, (unique % max(m, 1)).astype(np.int32),
                   indptr.astype(np.int64))

    @classmethod
    def of(cls, matrix: Any) -> CscMatrix:
        """A CscMatrix, a scipy.sparse matrix or a dense array, as a CscMatrix."""
        if isinstance(matrix, CscMatrix):
            return matrix
        if hasattr(matrix, "tocoo"):  # scipy.sparse (imported by the caller, not here)
            coo = matrix.tocoo()
            return cls.from_coo(coo.row, coo.col, coo.data, coo.shape)
        dense = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
        rows, cols = np.nonzero(dense)
        return cls.from_coo(rows, cols, dense[rows, cols], dense.shape)

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def column_of_entries(self) -> np.ndarray:
        """The column of every stored entry."""
        return np.repeat(np.arange(self.shape[1]), np.diff(self.indptr))

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """A @ x."""
        products = self.data * np.asarray(x, dtype=np.float64)[self.column_of_entries()]
        return np.bincount(self.indices, weights=products, minlength=self.shape[0])

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """A^T @ y."""
        products = self.data * np.asarray(y, dtype=np.float64)[self.indices]
        return np.bincount(self.column_of_entries(), weights=products,
                           minlength=self.shape[1])

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        out[self.indices, self.column_of_entries()] = self.data
        return out

    def to_scipy(self) -> Any:
        """The same matrix as scipy.sparse.csc_matrix (imports scipy)."""
        import scipy.sparse as sp

        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)


class LpStatus(enum.StrEnum):
    """dpverify's own solver statuses; each backend maps its solver's statuses to these."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIME_LIMIT = "time-limit"
    ERROR = "error"
    UNKNOWN = "unknown"


@record(eq=False)
class LinearProgram:
    """optimise c @ x subject to row_lower <= A @ x <= row_upper, col_lower <= x <= col_upper.

    Infinite bounds are +-inf. `maximize` selects the sense.
    """

    c: np.ndarray
    A: CscMatrix
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
    # True when the caller has scaled the LP itself (the count LPs: every entry in
    # [-1, 1]; the worst case's dense LP: each row's gain terms scaled to a largest entry
    # of 1): a backend that scales need not scale it again
    prescaled: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.A, CscMatrix):
            object.__setattr__(self, "A", CscMatrix.of(self.A))
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


@record(eq=False)
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
