"""The one way LPs are built: columns, rows and COO triplets, assembled into a
`LinearProgram` (compressed sparse columns, lp/model.py) at the end. Every verifier builds
its LPs with it.

A product channel F_1 (x) ... (x) F_k (randomized response's corners, a grid of points,
products of rays) can enter an LP in `chain` form (`LpBuilder.chain`): k passes of small
mixing with intermediate variables, O(k 2^k) non-zeros instead of the 4^k of the product
written out (design.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpverify.lp.model import CscMatrix, LinearProgram

if TYPE_CHECKING:  # annotations only (numpy.typing: 0.5 ms to import)
    from numpy.typing import ArrayLike


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

    def add_cols(self, count: int, cost: ArrayLike = 0.0, lo: ArrayLike = 0.0,
                 hi: ArrayLike = np.inf) -> np.ndarray:
        """`count` new columns; `cost`, `lo`, `hi` are scalars or arrays of length count."""
        idx = np.arange(self.num_cols, self.num_cols + count)
        self.num_cols += count
        self.c.append(np.broadcast_to(np.asarray(cost, dtype=float), (count,)).copy())
        self.col_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        self.col_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        return idx

    def add_rows(self, count: int, lo: ArrayLike, hi: ArrayLike) -> np.ndarray:
        """`count` new rows lo <= a x <= hi (scalars or arrays; +-inf for one-sided rows)."""
        idx = np.arange(self.num_rows, self.num_rows + count)
        self.num_rows += count
        self.row_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        self.row_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        return idx

    def set_cost(self, cols: np.ndarray, values: ArrayLike) -> None:
        """Set the cost of existing columns (applied when the LP is built)."""
        self.cost_updates.append((np.asarray(cols), np.asarray(values, dtype=float)))

    def add(self, rows: ArrayLike, cols: ArrayLike, vals: ArrayLike) -> None:
        """Entries (broadcast together); zeros are skipped, duplicates are summed."""
        rows, cols, vals = np.broadcast_arrays(np.asarray(rows), np.asarray(cols),
                                               np.asarray(vals, dtype=float))
        keep = vals != 0.0
        self.rows.append(rows[keep].ravel())
        self.cols.append(cols[keep].ravel())
        self.vals.append(vals[keep].ravel())

    def batch(self) -> RowBatch:
        """Rows added one at a time in Python, given to the builder in one call
        (RowBatch); no other rows may be added until it is closed."""
        return RowBatch(self)

    def add_matrix(self, row_idx: np.ndarray, col_idx: np.ndarray, M: Any) -> None:
        """The (dense or sparse) block M at rows row_idx and columns col_idx."""
        if hasattr(M, "tocoo"):  # scipy.sparse, given by the caller
            coo = M.tocoo()
            self.add(row_idx[coo.row], col_idx[coo.col], coo.data)
            return
        dense = np.atleast_2d(np.asarray(M, dtype=float))
        r, c = np.nonzero(dense)
        self.add(row_idx[r], col_idx[c], dense[r, c])

    def chain(self, factors: Sequence[np.ndarray],
              lo: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Columns z_0 (the family's theta) and z_k = (F_1 (x) ... (x) F_k) z_0.

        Pass j: z_j = (I_{2^(j-1)} (x) F_j (x) I_{rest}) z_{j-1}, as equality rows.
        Consecutive factors are first multiplied out in blocks of CHAIN_BLOCK parties.
        """
        factors = grouped(factors)
        dims = [f.shape[1] for f in factors]
        z0 = self.add_cols(int(np.prod(dims)), lo=lo)
        prev = z0
        left = 1
        for j, f in enumerate(factors):
            right = int(np.prod(dims[j + 1:]))
            fr, fc = f.shape
            size = left * fr * right
            nxt = self.add_cols(size, lo=lo)
            rows = self.add_rows(size, 0.0, 0.0)
            self.add(rows, nxt, 1.0)
            # I_left (x) F_j (x) I_right, entry by entry: row (l fr + a) right + r, column
            # (l fc + b) right + r for every non-zero F_j[a, b]
            a_, b_ = np.nonzero(f)
            ll, rr = np.meshgrid(np.arange(left), np.arange(right), indexing="ij")
            ll, rr = ll.ravel()[:, None], rr.ravel()[:, None]
            self.add(rows[(ll * fr + a_) * right + rr], prev[(ll * fc + b_) * right + rr],
                     -np.broadcast_to(f[a_, b_], (ll.size, a_.size)))
            prev = nxt
            left *= f.shape[0]
        return z0, prev

    def build(self, *, maximize: bool, name: str, solver: str = "",
              drop_tiny: bool = False, prescaled: bool = False) -> LinearProgram:
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=int)
        cols = np.concatenate(self.cols) if self.cols else np.zeros(0, dtype=int)
        vals = np.concatenate(self.vals) if self.vals else np.zeros(0)
        A = CscMatrix.from_coo(rows, cols, vals, (self.num_rows, self.num_cols))
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
            prescaled=prescaled,
        )


class RowBatch:
    """Rows with their entries, gathered in lists and given to an LpBuilder at `close()`:
    the same rows (numbered on from the builder's, in order), bounds and entries as one
    `add_rows(1, lo, hi)` and `add(row, cols, vals)` per row. An LP of thousands of small
    rows (the schedule LPs of verifiers/approximate) is built many times faster so."""

    def __init__(self, builder: LpBuilder) -> None:
        self.builder, self.first = builder, builder.num_rows
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []

    def row(self, lo: float, hi: float) -> int:
        """A new row lo <= a x <= hi; its index in the LP."""
        self.lo.append(lo)
        self.hi.append(hi)
        return self.first + len(self.lo) - 1

    def add(self, row: int, cols: Sequence[int], vals: Sequence[float]) -> None:
        """Entries of `row` (zeros skipped, duplicates summed, as LpBuilder.add)."""
        if len(cols) != len(vals):
            raise ValueError(f"{len(cols)} columns and {len(vals)} values")
        self.rows.extend([row] * len(cols))
        self.cols.extend(cols)
        self.vals.extend(vals)

    def close(self) -> None:
        """Give the rows and entries to the builder."""
        b = self.builder
        if b.num_rows != self.first:
            raise ValueError("rows were added to the builder while a batch was open")
        b.add_rows(len(self.lo), np.array(self.lo, dtype=float),
                   np.array(self.hi, dtype=float))
        b.add(np.array(self.rows, dtype=np.int64), np.array(self.cols, dtype=np.int64),
              np.array(self.vals, dtype=float))
        self.first = b.num_rows
        self.lo, self.hi, self.rows, self.cols, self.vals = [], [], [], [], []


# Parties per pass of the chain. Measured at k = 10 (observer XOR, HiGHS IPM): blocks of
# 3 solve the average LP in 2.3 s and the worst-case LP in 7.5 s, against 12.5 s and 23 s
# with one party per pass (and 24 s and 17 s with blocks of 2).
CHAIN_BLOCK = 3


# A block is only multiplied out while its entries stay above this (a product of small
# entries, as at lambda = 1e4, would otherwise fall below what HiGHS keeps).
CHAIN_BLOCK_MIN_ENTRY = 1e-8


def grouped(factors: Sequence[np.ndarray], block: int = CHAIN_BLOCK) -> list[np.ndarray]:
    """F_1 (x) ... (x) F_k regrouped: runs of up to `block` consecutive factors multiplied
    out, as long as the product's smallest non-zero entry stays >= CHAIN_BLOCK_MIN_ENTRY."""
    if any(f.shape != (2, 2) for f in factors):
        return list(factors)  # grids (2 x m factors) would only grow: keep one per pass
    out: list[np.ndarray] = []
    size = 0
    for f in factors:
        if out and size < block:
            product = np.kron(out[-1], f)
            nonzero = np.abs(product[product != 0])
            if nonzero.size == 0 or nonzero.min() >= CHAIN_BLOCK_MIN_ENTRY:
                out[-1], size = product, size + 1
                continue
        out.append(f)
        size = 1
    return out


def chain_nonzeros(dims_in: Sequence[int], dims_out: Sequence[int],
                   block: int = CHAIN_BLOCK) -> int:
    """Non-zeros of one chain (for the size guard): a pass over a block of parties has
    one row per entry of its output and (its input width + 1) non-zeros per row."""
    if all(d == 2 for d in dims_in):  # the corners: blocks of parties, as in `grouped`
        dims_in = [math.prod(dims_in[i:i + block]) for i in range(0, len(dims_in), block)]
        dims_out = [math.prod(dims_out[i:i + block]) for i in range(0, len(dims_out), block)]
    total = 0
    size = math.prod(dims_in)
    for j in range(len(dims_in)):
        size = size // dims_in[j] * dims_out[j]
        total += size * (dims_in[j] + 1)
    return total
