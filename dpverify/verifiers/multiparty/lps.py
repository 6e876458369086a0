"""The relaxed protocol LP of the multi-party verifier, built as numpy / scipy.sparse arrays
(theory.md, "The relaxed protocol LP"; KOV 2015, proof of Theorem 3.1): columns
P_label = sum_s theta[s, label] T_s over rank-one DP points T_s. (RR's worst-case
decision-rule LP, KOV eqs. (4) and (6), is theory/worst_lp.py.)

Point families: a *product* family (one 2 x m_i factor matrix per party, every product of
columns is a point: the corners, or an m-point grid) or *explicit* columns (random samples).
A product family is built in one of two forms that define the same LP over theta:
`dense`, with the 2^k x N point matrix written out (4^k non-zeros per label at the
corners), or `chain`, where P = (F_1 (x) ... (x) F_k) theta is written as k passes of
small mixing with intermediate variables (design.md: O(k 2^k) non-zeros per label).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpverify.defaults import LpForm
from dpverify.lp.builder import LpBuilder
from dpverify.lp.model import LinearProgram
from dpverify.records import record
from dpverify.theory.rr import kron_apply

FORMS = (LpForm.CHAIN, LpForm.DENSE)  # what an LP is built in (`auto` is resolved before)


@record(eq=False)
class PointFamily:
    """Rank-one DP points: `factors` (product family) or `columns` (2^k x N, explicit)."""

    factors: tuple[np.ndarray, ...] | None = None
    columns: np.ndarray | None = None

    def dense(self) -> np.ndarray:
        if self.columns is not None:
            return self.columns
        assert self.factors is not None
        size = math.prod(f.shape[1] for f in self.factors)
        return kron_apply(self.factors, np.eye(size))

    @property
    def size(self) -> int:
        if self.columns is not None:
            return int(self.columns.shape[1])
        assert self.factors is not None
        return math.prod(f.shape[1] for f in self.factors)


@record(eq=False)
class BuiltLp:
    """An LP and where its rows of interest are.

    `input_rows[x]`: the row of input x's constraint sum_label P_label[x] = 1, whose duals
    are mu.
    `worst_rows[x]`: the relaxed LP's worst-case rows (-1 where absent).
    `outputs`: for each label or output, the column indices of its primary block
    (theta of each family).
    """

    lp: LinearProgram
    input_rows: np.ndarray
    worst_rows: np.ndarray
    blocks: tuple[np.ndarray, ...]


def relaxed_lp(
    label_gains: np.ndarray,
    families: Sequence[PointFamily],
    worst: bool,
    form: str = LpForm.CHAIN,
) -> BuiltLp:
    """The relaxed protocol LP (theory.md) over the given rank-one point families.

    average: maximise (1/2^k) sum_x sum_l gain(x, l) P_l[x]
    worst:   maximise t  s.t.  sum_l gain(x, l) P_l[x] >= t for every x
    both:    sum_l P_l[x] = 1 for every x,  theta >= 0.
    """
    if form not in FORMS:
        raise ValueError(f"unknown LP form {form!r}")
    n, num_labels = label_gains.shape
    b = LpBuilder()
    input_rows = b.add_rows(n, 1.0, 1.0)
    worst_rows = b.add_rows(n, 0.0, np.inf) if worst else np.full(n, -1)
    blocks = []
    for label in range(num_labels):
        g = label_gains[:, label]
        for family in families:
            if form == LpForm.CHAIN and family.factors is not None:
                theta, z = b.chain(family.factors)
                b.add(input_rows, z, 1.0)
                if worst:
                    b.add(worst_rows, z, g)
                else:
                    b.set_cost(z, g / n)
            else:
                T = family.dense()
                theta = b.add_cols(T.shape[1], cost=0.0 if worst else (T.T @ g) / n)
                b.add_matrix(input_rows, theta, T)
                if worst:
                    b.add_matrix(worst_rows, theta, T * g[:, None])
            blocks.append(theta)
    if worst:
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(worst_rows, t, -1.0)
    lp = b.build(maximize=True, name=f"relaxed-{'worst' if worst else 'average'}")
    return BuiltLp(lp, input_rows, worst_rows, tuple(blocks))
