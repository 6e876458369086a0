"""`theory.rr.kron_apply`: (F_1 (x) ... (x) F_k) @ v without forming the product, against
the product formed by np.kron, for square and non-square factors, a vector or trailing
columns, float64 and long double."""

from __future__ import annotations

import numpy as np
import pytest

from dpverify.theory.rr import kron_apply, rr_channel, rr_matrix


def formed(factors: list[np.ndarray]) -> np.ndarray:
    out = np.ones((1, 1))
    for f in factors:
        out = np.kron(out, f)
    return out


@pytest.mark.parametrize("shapes", [[(2, 2)] * 5, [(3, 2), (2, 4), (1, 3)], [(2, 3)],
                                    [(4, 1), (2, 2), (3, 3)]])
@pytest.mark.parametrize("trailing", [(), (1,), (3,), (2, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.longdouble])
def test_kron_apply_is_the_formed_product(shapes, trailing, dtype):
    rng = np.random.default_rng(len(shapes) * 10 + len(trailing))
    factors = [rng.uniform(-1, 1, s) for s in shapes]
    columns = int(np.prod([c for _, c in shapes]))
    v = rng.uniform(-1, 1, (columns, *trailing))
    got = kron_apply(factors, v, dtype)
    want = (formed(factors) @ v.reshape(columns, -1)).reshape(-1, *trailing)
    assert got.dtype == dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=0, atol=1e-14)


def test_the_order_of_the_factors_matters_and_is_kept():
    """Negative control: the big-endian order (axis 1 first) is what the test above checks;
    the factors reversed give another product."""
    lambdas = [2.0, 5.0, 11.0]
    v = np.arange(8.0)
    got = kron_apply([rr_channel(lam) for lam in lambdas], v)
    np.testing.assert_allclose(got, rr_matrix(lambdas) @ v, rtol=1e-15)
    reversed_ = kron_apply([rr_channel(lam) for lam in reversed(lambdas)], v)
    assert np.max(np.abs(reversed_ - got)) > 0.1


def test_no_rows():
    assert kron_apply([np.ones((2, 2))], np.zeros((2, 0))).shape == (2, 0)
