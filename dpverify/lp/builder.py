"""The one way LPs are built: columns, rows and COO triplets, assembled into a
`LinearProgram` (scipy.sparse CSC) at the end. Every verifier builds its LPs with it."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpverify.lp.model import LinearProgram


class LpBuilder:
    """Accumulates columns (with costs and bounds), rows (with bounds) and entries."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.col_lo: list[np.ndarray] = []
        self.col_hi: list[np.ndarray] = []
        self.row_lo: list[np.ndarray] = []
        self.row_hi: list[np.ndarray] = []
        self.num_cols = 0
        self.num_rows = 0
        self.cost_updates: list[tuple[np.ndarray, np.ndarray]] = []

    def add_cols(self, count: int, cost=0.0, lo=0.0, hi=np.inf) -> np.ndarray:
        """`count` new columns; `cost`, `lo`, `hi` are scalars or arrays of length count."""
        idx = np.arange(self.num_cols, self.num_cols + count)
        self.num_cols += count
        self.c.append(np.broadcast_to(np.asarray(cost, dtype=float), (count,)).copy())
        self.col_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        self.col_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        return idx

    def add_rows(self, count: int, lo, hi) -> np.ndarray:
        """`count` new rows lo <= a x <= hi (scalars or arrays; +-inf for one-sided rows)."""
        idx = np.arange(self.num_rows, self.num_rows + count)
        self.num_rows += count
        self.row_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        self.row_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        return idx

    def set_cost(self, cols: np.ndarray, values) -> None:
        """Set the cost of existing columns (applied when the LP is built)."""
        self.cost_updates.append((np.asarray(cols), np.asarray(values, dtype=float)))

    def add(self, rows, cols, vals) -> None:
        """Entries (broadcast together); zeros are skipped, duplicates are summed."""
        rows, cols, vals = np.broadcast_arrays(np.asarray(rows), np.asarray(cols),
                                               np.asarray(vals, dtype=float))
        keep = vals != 0.0
        self.rows.append(rows[keep].ravel())
        self.cols.append(cols[keep].ravel())
        self.vals.append(vals[keep].ravel())

    def add_matrix(self, row_idx: np.ndarray, col_idx: np.ndarray, M) -> None:
        """The (dense or sparse) block M at rows row_idx and columns col_idx."""
        M = sp.coo_matrix(M)
        self.add(row_idx[M.row], col_idx[M.col], M.data)

    def build(self, *, maximize: bool, name: str, solver: str = "",
              drop_tiny: bool = False) -> LinearProgram:
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=int)
        cols = np.concatenate(self.cols) if self.cols else np.zeros(0, dtype=int)
        vals = np.concatenate(self.vals) if self.vals else np.zeros(0)
        A = sp.csc_matrix((vals, (rows, cols)), shape=(self.num_rows, self.num_cols))
        A.sum_duplicates()
        A.eliminate_zeros()
        c = np.concatenate(self.c) if self.c else np.zeros(0)
        for cols_, values in self.cost_updates:
            c[cols_] = values
        return LinearProgram(
            c=c, A=A,
            row_lower=np.concatenate(self.row_lo) if self.row_lo else np.zeros(0),
            row_upper=np.concatenate(self.row_hi) if self.row_hi else np.zeros(0),
            col_lower=np.concatenate(self.col_lo) if self.col_lo else np.zeros(0),
            col_upper=np.concatenate(self.col_hi) if self.col_hi else np.zeros(0),
            maximize=maximize, name=name, solver=solver, drop_tiny=drop_tiny,
        )
