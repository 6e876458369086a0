"""The polish's least squares (theory/worst_polish.py): a solution and the whole null space
of tall and of wide systems, with the thin SVD where it has every row of V^T (tall: a full
U of thousands of tie equations took seconds) and the full one where it does not (wide)."""

from __future__ import annotations

import numpy as np
import pytest

from dpverify.theory.worst_polish import _least_squares


def system(rows: int, cols: int, rank: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, rank)) @ rng.standard_normal((rank, cols))
    return matrix, matrix @ rng.standard_normal(cols)  # a consistent right-hand side


def null_dimension(matrix: np.ndarray) -> int:
    return matrix.shape[1] - int(np.linalg.matrix_rank(matrix))


@pytest.mark.parametrize("rows, cols, rank", [(3000, 3, 2), (800, 40, 25), (5, 30, 4),
                                              (12, 12, 12)])
def test_a_solution_and_the_whole_null_space(rows, cols, rank):
    matrix, rhs = system(rows, cols, rank)
    x, null = _least_squares(matrix, rhs)
    x64, null64 = np.asarray(x, dtype=np.float64), np.asarray(null, dtype=np.float64)
    assert np.abs(matrix @ x64 - rhs).max() < 1e-9 * np.abs(rhs).max()
    assert null64.shape == (cols, null_dimension(matrix))
    assert np.all(np.abs(matrix @ null64) < 1e-9 * np.abs(matrix).max())
    assert np.allclose(null64.T @ null64, np.eye(null64.shape[1]), atol=1e-9)


def test_the_thin_svd_of_a_wide_system_misses_null_directions():
    # control: why a wide system keeps the full SVD (its thin V^T has only `rows` rows)
    matrix, _ = system(5, 30, 4)
    _, sv, vt = np.linalg.svd(matrix, full_matrices=False)
    rank = int(np.sum(sv > 1e-13 * sv[0]))
    assert vt[rank:].shape[0] < null_dimension(matrix)
