"""Approximate DP, the pure mathematics (dpverify/theory/approx/): RR(epsilon, delta), the
hockey-stick sums of explicit protocols against KOV eq. (12) itself (the worst set of
transcripts found by enumeration), the four-ray split and the lemma the bound rests on,
and the exact four-ray dual (the envelope's are in tests/test_envelope.py)."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from dpverify.theory.approx.certificate import (
    check_dual_bound,
    dual_bound,
    dual_values,
    exact_label_gains,
    hockey_keys,
)
from dpverify.theory.approx.hockey import (
    achieved_delta,
    delta_bracket,
    hockey_sums,
    ordered_pairs,
    privacy_profile,
)
from dpverify.theory.approx.rays import hockey_matrix, ray_counts, ray_products
from dpverify.theory.approx.rr import (
    REVEAL_0,
    REVEAL_1,
    four_rays,
    ray_split,
    rr_delta_kernel,
    rr_delta_product,
)
from dpverify.theory.exact import exp_bracket
from dpverify.theory.protocols.transcripts import Transcripts, input_symbols

LEVELS = [(F(3), F(1, 10)), (F(2), F(1, 5)), (F(7, 5), F(1, 3)), (F(1), F(1, 4)),
          (F(5), F(0))]


# -- RR(epsilon, delta) ---------------------------------------------------------------
@pytest.mark.parametrize("lam,delta", LEVELS)
def test_rr_delta_kernel_is_a_channel_with_the_papers_entries(lam, delta):
    K = rr_delta_kernel(lam, delta)
    assert all(sum(row) == 1 for row in K)
    assert K[0] == [delta, (1 - delta) * lam / (1 + lam), (1 - delta) / (1 + lam), 0]
    assert K[1] == list(reversed(K[0]))


@pytest.mark.parametrize("lam,delta", LEVELS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_achieved_delta_of_rr_delta_is_delta_exactly(lam, delta, k):
    levels = [(lam, delta)] + LEVELS[:k - 1]
    tr = rr_delta_product([v[0] for v in levels], [v[1] for v in levels])
    assert tr.exact and tr.num.shape == (1 << k, 4 ** k)
    for i, (lam_i, delta_i) in enumerate(levels):
        assert achieved_delta(tr, i + 1, lam_i) == delta_i
        # every x_-i and both directions spend exactly delta_i: the reveal outputs
        assert set(hockey_sums(tr, i + 1, lam_i).ravel().tolist()) == {delta_i}


def test_a_claim_below_the_achieved_delta_is_caught():
    tr = rr_delta_product([F(3), F(3)], [F(1, 10), F(1, 10)])
    bracket = delta_bracket(tr, 2, F(3), F(3))
    assert bracket.meets(F(1, 10)) is True
    assert bracket.meets(F(99, 1000)) is False  # negative control
    # at a lower level than its own, RR(3, 1/10) spends more: (1 - d)(lam - lam')/(1 + lam)
    assert achieved_delta(tr, 1, F(2)) == F(1, 10) + F(9, 10) * F(1, 4)


def _worst_set(P: np.ndarray, party: int, lam: F, k: int) -> F:
    """KOV 2015 eq. (12) by enumeration: the largest P(T | a, x_-i) - lam P(T | b, x_-i)
    over every set T of transcripts, every x_-i and both orders."""
    symbols = input_symbols((2,) * k)
    best = F(0)
    T = P.shape[1]
    for x in range(1 << k):
        if symbols[x, party - 1] != 0:
            continue
        y = x + (1 << (k - party))  # the same x_-i with x_i = 1
        for a, b in ((x, y), (y, x)):
            for size in range(T + 1):
                for subset in itertools.combinations(range(T), size):
                    gap = sum((P[a, t] - lam * P[b, t] for t in subset), F(0))
                    best = max(best, gap)
    return best


def _random_protocol(rng: np.random.Generator, k: int, M: int, exact: bool = True
                     ) -> tuple[list[int], list[np.ndarray]]:
    order = [int(v) + 1 for v in rng.permutation(k)]
    kernels = []
    for r in range(k):
        stack = np.empty((M ** r, 2, M), dtype=object)
        for p in range(M ** r):
            for a in range(2):
                raw = rng.integers(0, 5, size=M)
                raw[rng.integers(M)] += 1
                stack[p, a] = [F(int(v), int(raw.sum())) for v in raw]
        kernels.append(stack)
    return order, kernels


def _exact_matrix(order, kernels) -> np.ndarray:
    k = len(order)
    P = np.array([[F(1)]] * (1 << k), dtype=object)
    symbols = input_symbols((2,) * k)
    for speaker, K in zip(order, kernels, strict=True):
        rows = K[:, symbols[:, speaker - 1], :]
        P = (P.T[:, :, None] * rows).transpose(1, 0, 2).reshape(1 << k, -1)
    return P


def _transcripts(P: np.ndarray, k: int) -> Transcripts:
    den = 1
    for v in P.ravel():
        den = den * v.denominator // np.gcd(den, v.denominator)
    num = np.array([[int(v * den) for v in row] for row in P], dtype=object)
    return Transcripts((2,) * k, (P.shape[1],), num, int(den), True)


@pytest.mark.parametrize("seed", range(4))
def test_hockey_sums_are_the_worst_set_of_eq_12(seed):
    rng = np.random.default_rng(seed)
    k, M = 2, 2
    order, kernels = _random_protocol(rng, k, M)
    P = _exact_matrix(order, kernels)
    tr = _transcripts(P, k)
    lam = F(int(rng.integers(1, 4)), 1) + F(1, 3)
    for party in (1, 2):
        assert achieved_delta(tr, party, lam) == _worst_set(P, party, lam, k)


def test_privacy_profile_of_rr_delta_in_closed_form():
    lam, delta = F(3), F(1, 10)
    tr = rr_delta_product([lam], [delta])
    grid = [F(0), F(1, 2), F(1), F(11, 10), F(2)]
    profile = privacy_profile(tr, 1, grid)
    for point in profile:
        lo, hi = exp_bracket(point.epsilon)
        # below its level RR(lam, d) spends d + (1 - d)(lam - lam') / (1 + lam)
        expect_hi = delta + (1 - delta) * max(F(0), (lam - lo) / (1 + lam))
        expect_lo = delta + (1 - delta) * max(F(0), (lam - hi) / (1 + lam))
        assert (point.delta.lower, point.delta.upper) == (expect_lo, expect_hi)
    uppers = [p.delta.upper for p in profile]
    assert uppers == sorted(uppers, reverse=True)
    assert profile[0].delta.exact and profile[0].delta.upper == F(1, 10) + F(9, 10) * F(1, 2)


# -- the four rays --------------------------------------------------------------------
@pytest.mark.parametrize("u,v,lam", [(F(5), F(1), F(3)), (F(2), F(3), F(3)),
                                     (F(1), F(7), F(2)), (F(0), F(1), F(2)),
                                     (F(4), F(4), F(1)), (F(3), F(1), F(1))])
def test_ray_split_reconstructs_the_factor_with_the_reveal_parts(u, v, lam):
    c = ray_split(u, v, lam)
    R = four_rays(lam)
    assert all(x >= 0 for x in c)
    assert [sum(c[r] * R[b][r] for r in range(4)) for b in (0, 1)] == [u, v]
    assert c[REVEAL_0] == max(F(0), u - lam * v)
    assert c[REVEAL_1] == max(F(0), v - lam * u)


@pytest.mark.parametrize("seed", range(3))
def test_splitting_transcripts_keeps_every_hockey_stick_sum(seed):
    """The lemma of issue 20 (point 2): splitting every transcript's factors on the four
    rays gives theta >= 0 with T theta = P and H theta = the protocol's hockey-stick sums."""
    rng = np.random.default_rng(20 + seed)
    k, M = 2, 3
    order, kernels = _random_protocol(rng, k, M)
    lam = F(2)
    P = _exact_matrix(order, kernels)
    # each transcript's factor per party: the product of its own kernel columns
    T = P.shape[1]
    factors = np.ones((T, k, 2), dtype=object) * F(1)
    for t in range(T):
        messages = np.unravel_index(t, (M,) * k)
        for r, j in enumerate(order):
            prefix = int(np.ravel_multi_index(messages[:r], (M,) * r)) if r else 0
            factors[t, j - 1] = [kernels[r][prefix, a, messages[r]] for a in (0, 1)]
    counts = ray_counts([F(1, 10)] * k)
    points = ray_products([float(lam)] * k, counts)
    theta = np.zeros(4 ** k, dtype=object)
    for t in range(T):
        splits = [ray_split(factors[t, j, 0], factors[t, j, 1], lam) for j in range(k)]
        piece = np.zeros(4 ** k, dtype=object)
        for s in itertools.product(range(4), repeat=k):
            piece[int(np.ravel_multi_index(s, (4,) * k))] = np.prod(
                [splits[j][s[j]] for j in range(k)])
        assert np.allclose(points @ piece.astype(float), P[:, t].astype(float))
        theta = theta + piece
    H, keys = hockey_matrix([float(lam)] * k, counts)
    tr = _transcripts(P, k)
    for party in (1, 2):
        sums = hockey_sums(tr, party, lam)  # (directions, x_-i)
        for row, key in zip(H, keys, strict=True):
            if key.party == party:
                direction = ordered_pairs(2).index((key.bit, 1 - key.bit))
                assert float(row @ theta.astype(float)) == pytest.approx(
                    float(sums[direction, key.others]), abs=1e-12)


# -- the exact dual bound -----------------------------------------------------------------
def _xor_gains(k: int) -> list[list[F]]:
    return [[F(int(bin(x).count("1") % 2 == y)) for y in (0, 1)] for x in range(1 << k)]


def test_the_dual_check_catches_a_violated_inequality():
    k, lam, delta = 2, F(3), F(1, 10)
    gains = exact_label_gains(_xor_gains(k), 0)
    n = 1 << k
    prior = [F(1, n)] * n
    nu = [F(0)] * len(hockey_keys([lam] * k, [delta] * k))
    repaired = dual_bound([lam] * k, [delta] * k, gains, prior, [F(0)] * n, nu)
    assert check_dual_bound(repaired, gains)
    assert repaired.shift > 0
    low, _, _ = dual_values([lam] * k, [delta] * k, gains, prior, list(repaired.mu), nu)
    assert low == 0  # the repair is the least shift
    broken = dual_bound([lam] * k, [delta] * k, gains, prior, [F(0)] * n, nu)
    tampered = type(broken)(broken.bound - F(1, 10**6), broken.prior,
                            tuple(v - F(1, 10**6) for v in broken.mu), broken.nu,
                            broken.lambdas, broken.deltas, broken.shift)
    assert not check_dual_bound(tampered, gains)  # negative control


def test_the_dual_values_match_a_dense_evaluation():
    rng = np.random.default_rng(7)
    k, lams, deltas = 3, [F(3), F(2), F(5, 2)], [F(1, 10), F(0), F(1, 5)]
    gains = exact_label_gains([[F(int(v)) for v in rng.integers(0, 3, size=2)]
                               for _ in range(1 << k)], 2)
    n = 1 << k
    prior = [F(1, n)] * n
    mu = [F(int(v), 7) for v in rng.integers(-3, 4, size=n)]
    keys = hockey_keys(lams, deltas)
    nu = [F(int(v), 5) for v in rng.integers(0, 4, size=len(keys))]
    low, s, lab = dual_values(lams, deltas, gains, prior, mu, nu)
    counts = ray_counts(deltas)
    T = np.ones((1, 1), dtype=object)
    for lam, c in zip(lams, counts, strict=True):
        T = np.kron(T, np.array(four_rays(lam), dtype=object)[:, :c])
    H = np.zeros((len(keys), T.shape[1]), dtype=object)
    reveal = (REVEAL_0, REVEAL_1)
    for row, key in enumerate(keys):
        for col, combo in enumerate(itertools.product(*(range(c) for c in counts))):
            if combo[key.party - 1] == reveal[key.bit]:
                others = np.unravel_index(key.others, (2,) * (k - 1))
                bits = list(others)
                bits.insert(key.party - 1, key.bit)
                H[row, col] = T[int(np.ravel_multi_index(bits, (2,) * k)), col]
    G = np.array(gains, dtype=object)
    dense = [[sum(T[x, c] * (mu[x] - prior[x] * G[x, lab2]) for x in range(n))
              + sum(nu[r] * H[r, c] for r in range(len(keys)))
              for lab2 in range(G.shape[1])] for c in range(T.shape[1])]
    assert low == min(min(row) for row in dense)
    assert dense[s][lab] == low
