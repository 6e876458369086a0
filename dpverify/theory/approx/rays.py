"""The four-ray rank-one LP: an upper bound on an agent's accuracy over every interactive
protocol that is (epsilon_i, delta_i)-DP for each party i (issue 20, point 2; docs/theory.md,
"Approximate privacy"). This module builds its data as arrays; verifiers/approximate/bound.py
assembles and solves it, and theory/approx/certificate.py proves its dual bound exactly.

**Derivation.** A transcript's column is rank-one (KOV 2015, eq. (8)):
P(t | x) = prod_j u_j(t)[x_j]. Split every factor u_j(t) = (u, v) on the four normalised
rays of theory/approx/rr.py, with reveal parts max(0, u - lambda_j v) on (1, 0) and
max(0, v - lambda_j u) on (0, 1), and expand the product: the column is a non-negative
combination sum_s c_s(t) T_s of the products of rays T_s = r_{s_1} (x) ... (x) r_{s_k}.
Merging transcripts by decision (KOV's labels: outputs for the observer, pairs (y0, y1)
for a party) gives theta[s, l] = sum_t c_s(t) Q_l(t) >= 0 with P_l = sum_s theta[s, l] T_s.

* Marginals: sum_l P_l[x] = 1 for every input x; the accuracy is linear in P_l (KOV's
  (17) and (20)).
* Hockey-stick rows, one per party i, own bit a (direction a -> b = 1 - a) and x_-i:

      sum_l sum_s theta[s, l] H_s = sum_t max(0, P(t | a, x_-i) - lambda_i P(t | b, x_-i))

  with H_s = max(0, T_s(a, x_-i) - lambda_i T_s(b, x_-i)). A product's H_s is 0 unless
  its party-i ray is the reveal ray of a, and then it is prod_{j != i} r_{s_j}[x_j] =
  T_s(a, x_-i). For one transcript, sum_s c_s(t) H_s = max(0, u_i[a] - lambda_i u_i[b])
  prod_{j != i} u_j[x_j] (the other parties' splits sum back to their factors), which is
  exactly the transcript's own term; summed over labels (sum_l Q_l(t) = 1) and transcripts
  it is the protocol's hockey-stick sum. So every protocol that meets eq. (12) gives a
  feasible theta with its accuracy, and the LP's optimum bounds them all.
* delta_i = 0 forces theta = 0 on every product with a reveal ray of party i (its H_s > 0
  for the x_-i where the other rays are positive), so such products are left out: at
  delta = 0 the LP is KOV's corner LP (docs/theory.md, section 1.7).

Products are numbered in mixed radix over each party's rays (party 1 most significant),
inputs big-endian, as everywhere in dpverify.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.theory.approx.rr import REVEAL_0, REVEAL_1, four_rays
from dpverify.theory.decision import party_label_gains


def ray_counts(deltas: Sequence[Fraction | float]) -> tuple[int, ...]:
    """Each party's rays: the four when delta_i > 0, the two corners when delta_i = 0."""
    return tuple(4 if d > 0 else 2 for d in deltas)


def ray_factor(lam: float, rays: int) -> np.ndarray:
    """A party's rays as a 2 x rays float matrix (the first `rays` of four_rays)."""
    return np.array(four_rays(float(lam)), dtype=np.float64)[:, :rays]


@record
class HockeyRow:
    """A hockey-stick row: `party` (1-based), own bit `bit` (the direction bit -> 1 - bit)
    and the other parties' input `others` (mixed radix over x_-i, x1 first)."""

    party: int
    bit: int
    others: int


@record(eq=False)
class RayLpData:
    """The four-ray LP's data for one agent (floats): `points` T (inputs x products), the
    hockey-stick matrix `hockey` (rows x products, the same for every label) with the
    rows' `keys` and bounds `row_deltas`, and `label_gains` (inputs x labels)."""

    counts: tuple[int, ...]
    points: np.ndarray
    hockey: np.ndarray
    keys: tuple[HockeyRow, ...]
    row_deltas: np.ndarray
    label_gains: np.ndarray

    @property
    def products(self) -> int:
        return int(self.points.shape[1])

    @property
    def labels(self) -> int:
        return int(self.label_gains.shape[1])


def ray_products(lambdas: Sequence[float], counts: Sequence[int]) -> np.ndarray:
    """T: inputs x products, every product of the parties' normalised rays."""
    T = np.ones((1, 1))
    for lam, r in zip(lambdas, counts, strict=True):
        T = np.kron(T, ray_factor(lam, r))
    return T


def hockey_matrix(lambdas: Sequence[float], counts: Sequence[int]
                  ) -> tuple[np.ndarray, list[HockeyRow]]:
    """The hockey-stick rows (module docstring): for party i with reveal rays, own bit a and
    x_-i, the row kron over parties of (r_j[x_j, .] for j != i; the indicator of party i's
    reveal ray of a)."""
    k = len(counts)
    blocks, keys = [], []
    for i in range(k):
        if counts[i] < 4:
            continue
        for a, reveal in ((0, REVEAL_0), (1, REVEAL_1)):
            M: np.ndarray = np.ones((1, 1))
            for j in range(k):
                if j == i:
                    indicator = np.zeros((1, counts[j]))
                    indicator[0, reveal] = 1.0
                    M = np.kron(M, indicator)
                else:
                    M = np.kron(M, ray_factor(lambdas[j], counts[j]))
            blocks.append(M)
            keys += [HockeyRow(i + 1, a, o) for o in range(M.shape[0])]
    S = math.prod(counts)
    return (np.vstack(blocks) if blocks else np.zeros((0, S))), keys


def agent_label_gains(gain: np.ndarray, party: int) -> np.ndarray:
    """gain(x, label): the outputs for the observer (party 0), the pairs (y0, y1) of KOV's
    merged columns for party i (theory/decision.py)."""
    return gain if party == 0 else party_label_gains(gain, party)[0]


def ray_lp_data(lambdas: Sequence[float], deltas: Sequence[Fraction | float],
                gain: np.ndarray, party: int) -> RayLpData:
    """The four-ray LP's data at float levels (module docstring)."""
    counts = ray_counts(deltas)
    H, keys = hockey_matrix(lambdas, counts)
    row_deltas = np.array([float(deltas[key.party - 1]) for key in keys], dtype=np.float64)
    return RayLpData(counts, ray_products(lambdas, counts), H, tuple(keys), row_deltas,
                     agent_label_gains(gain, party))


def lp_nonzeros(k: int, deltas: Sequence[Fraction | float], labels: int, worst: bool) -> int:
    """About the non-zeros of the LP (for a size guard, before anything is built)."""
    counts = ray_counts(deltas)
    S = math.prod(counts)
    n = 1 << k
    dense = n * S  # an upper bound on T's non-zeros
    rows = sum(2 * (n // 2) * (S // c) for c in counts if c == 4)
    return labels * (dense * (2 if worst else 1) + rows)
