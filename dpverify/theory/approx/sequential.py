"""Sequential protocols on bits, where every party speaks once, in some order, with an
M-ary message whose kernel may depend on every earlier message, and the linear forms of one
party's exact best response under (epsilon, delta)-DP (docs/theory.md, "Approximate
privacy"; the search is verifiers/approximate/search.py).

In round r party j = order[r] draws m_r from K_r[p][x_j], p = (m_1, ..., m_(r-1)):

    P(t | x) = A_r(p, x) K_r[p][x_j][m_r] B_r(suffix | p, m_r, x)                    (S)

where A_r is the product of the earlier rounds' kernels along p (it depends only on the
earlier speakers' bits, not on x_j) and B_r the product of the later ones.

* **Accuracy.** For a fixed decision rule with value V(x, t) = sum_y Q(t, y) w(f(x), y),
  acc(x) = sum_{p, m} K_r[p][x_j][m] C(x, p, m), C(x, p, m) = sum_suffix
  A_r B_r V(x, (p, m, suffix)): linear in K_r (`accuracy_form`).
* **The speaker's own privacy.** Party j speaks only in round r, so in
  P(t | a, x_-j) - lambda P(t | b, x_-j) the factors A_r and B_r are common, and B_r sums
  to 1 over the suffixes (the later kernels are distributions):

      HS_j(x_-j, a -> b) = sum_p A_r(p, x) h(K_r[p], a),
      h(K, a) = sum_m max(0, K[a][m] - lambda K[b][m])

  With one slack s[p, a, m] >= K[p][a][m] - lambda K[p][b][m], s >= 0, the constraint
  sum_p A_r(p, x) sum_m s[p, a, m] <= delta_j (for each x_-j, a) is linear, and its
  projection on K_r is exactly the DP set (`prefix_mass`).
* **The later speakers' privacy.** A party j2 speaking in round r2 > r has
  HS_j2(x_-j2, a) = sum_p2 A_r2(p2, x) h(K_r2[p2], a), and A_r2 contains K_r once:
  linear in K_r (`later_spend_form`). Changing K_r changes how often later parties reach
  their prefixes, so these rows belong to K_r's best response too (in the issue's example,
  party 1 revealing more often would make party 2 reveal more often). The earlier
  speakers' sums do not depend on K_r (its messages sum out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.theory.protocols.transcripts import input_symbols, propagate


@dataclass(frozen=True, eq=False)
class Sequential:
    """A sequential protocol in floats: `order[r]` (1-based) speaks in round r with
    `kernels[r]` of shape (M^r prefixes, 2, M) (prefixes in mixed radix, the first message
    most significant)."""

    order: tuple[int, ...]
    kernels: tuple[np.ndarray, ...]
    messages: int

    def __post_init__(self) -> None:
        k, M = len(self.order), self.messages
        if sorted(self.order) != list(range(1, k + 1)):
            raise ValueError(f"every party speaks once: {self.order}")
        for r, K in enumerate(self.kernels):
            if K.shape != (M ** r, 2, M):
                raise ValueError(f"round {r}: kernels of shape {(M ** r, 2, M)}: {K.shape}")

    @property
    def parties(self) -> int:
        return len(self.order)

    @property
    def alphabets(self) -> tuple[int, ...]:
        return (2,) * len(self.order)

    def matrix(self, replace: dict[int, np.ndarray] | None = None,
               rounds: int | None = None) -> np.ndarray:
        """P(t | x) (inputs x transcripts, (S)); with `replace`, some rounds' kernels
        replaced (ones: the round left out); with `rounds`, the first rounds only."""
        kernels = list(self.kernels[:rounds])
        for r, K in (replace or {}).items():
            if r < len(kernels):
                kernels[r] = K
        return propagate(self.alphabets, list(self.order[:len(kernels)]), kernels)

    def with_kernel(self, r: int, K: np.ndarray) -> Sequential:
        kernels = list(self.kernels)
        kernels[r] = K
        return Sequential(self.order, tuple(kernels), self.messages)


def prefix_spend(K: np.ndarray, lam: float) -> np.ndarray:
    """h(K[p], a) for every prefix p and own bit a: shape (prefixes, 2)."""
    h0 = np.clip(K[:, 0, :] - lam * K[:, 1, :], 0.0, None).sum(axis=1)
    h1 = np.clip(K[:, 1, :] - lam * K[:, 0, :], 0.0, None).sum(axis=1)
    return np.stack([h0, h1], axis=1)


def prefix_mass(seq: Sequential, r: int) -> np.ndarray:
    """A_r(p, x): inputs x prefixes of round r."""
    return seq.matrix(rounds=r)


def spends(seq: Sequential, lambdas: Sequence[float]) -> np.ndarray:
    """Each party's achieved delta at its lambda (floats), by (S): the largest
    sum_p A_r(p, x) h(K_r[p], a) over x and a."""
    out = np.zeros(seq.parties)
    for r, j in enumerate(seq.order):
        A = prefix_mass(seq, r)
        out[j - 1] = float((A @ prefix_spend(seq.kernels[r], lambdas[j - 1])).max())
    return out


def accuracy_form(seq: Sequential, r: int, V: np.ndarray) -> np.ndarray:
    """C(x, p, m) of the module docstring: shape (inputs, M^r, M)."""
    M = seq.messages
    ones = np.ones_like(seq.kernels[r])
    W = seq.matrix(replace={r: ones}) * V  # A_r B_r V, the round's own factor left out
    n = W.shape[0]
    return W.reshape(n, M ** r, M, -1).sum(axis=3)


def later_spend_form(seq: Sequential, r: int, r2: int, lam2: float) -> np.ndarray:
    """The linear form of party order[r2]'s hockey-stick sums in K_r (r2 > r): D with
    HS(x, a) = sum_{p, m} K_r[p][x_j][m] D(x, p, m, a); shape (inputs, M^r, M, 2)."""
    if r2 <= r:
        raise ValueError("only later rounds depend on K_r")
    M = seq.messages
    ones = np.ones_like(seq.kernels[r])
    mass = seq.matrix(replace={r: ones}, rounds=r2)  # (n, M^r2), K_r left out
    h = prefix_spend(seq.kernels[r2], lam2)  # (M^r2, 2)
    n = mass.shape[0]
    D = mass[:, :, None] * h[None, :, :]
    return D.reshape(n, M ** r, M, -1, 2).sum(axis=3)


def own_bits(seq: Sequential, party: int) -> np.ndarray:
    """x_party for every input."""
    return input_symbols(seq.alphabets)[:, party - 1]


# -- exact ------------------------------------------------------------------------------
def exact_prefix_mass(order: Sequence[int], kernels: Sequence[np.ndarray], r: int
                      ) -> tuple[np.ndarray, int]:
    """A_r(p, x) exactly for kernels of Fractions (`kernels[r]`: (prefixes, 2, M)): Python
    integers over one denominator."""
    arrays, den = [], 1
    for K in kernels[:r]:
        d = math.lcm(*(Fraction(v).denominator for v in K.ravel().tolist()))
        arrays.append(np.array([int(Fraction(v) * d) for v in K.ravel().tolist()],
                               dtype=object).reshape(K.shape))
        den *= d
    if not arrays:
        n = 1 << len(order)
        return np.array([[1]] * n, dtype=object), 1
    return propagate((2,) * len(order), list(order[:r]), arrays), den


def exact_spend(order: Sequence[int], kernels: Sequence[np.ndarray], r: int,
                lam: Fraction) -> Fraction:
    """The achieved delta of party order[r] at a rational lambda, exactly, by (S):
    max over x and a of sum_p A_r(p, x) h(K_r[p], a)."""
    A, den = exact_prefix_mass(order, kernels, r)
    K = kernels[r]
    best = Fraction(0)
    for a in (0, 1):
        h = [sum((max(Fraction(0), Fraction(K[p, a, m]) - lam * Fraction(K[p, 1 - a, m]))
                  for m in range(K.shape[2])), Fraction(0)) for p in range(K.shape[0])]
        hden = math.lcm(*(v.denominator for v in h))
        hint = np.array([int(v * hden) for v in h], dtype=object)
        sums = A.dot(hint)
        best = max(best, Fraction(int(max(sums.tolist())), den * hden))
    return best
