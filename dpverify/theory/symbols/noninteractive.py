"""Non-interactive protocols on symbols: one DP channel per party, the product protocol,
the linear form of an agent's accuracy in one party's channel, starting channels for the
search, and exact witnesses (docs/theory.md, section 6.4).

A non-interactive protocol publishes o_i ~ C_i[x_i, .] for every party at once, so

    P[x, o] = prod_i C_i[x_i, o_i]                    (outputs o in mixed radix, o_1 first)

and it is lambda_i-DP for party i exactly when every column of C_i lies in the DP cone:
max_a C_i[a, o] <= lambda_i min_a C_i[a, o] (theory/symbols/rays.py). With the decision rule Q and
the other channels fixed, an agent's accuracy at each input is linear in C_i:

    acc[x] = sum_{o_i} C_i[x_i, o_i] A_i[x, o_i],
    A_i[x, o_i] = sum_{o_-i} prod_{j != i} C_j[x_j, o_j] sum_y Q[o, y] w(f(x), y)

so the best channel of party i is an LP (verifiers/multisymbol/search.py), which alternates with
the optimal rule for the fixed protocol (KOV 2015, eqs. (2), (4)-(6)).
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.theory.exact_rows import (
    LARGEST,
    clean_stochastic,
    dyadic,
    exact_stochastic,
    finite_mass,
    snap,
)
from dpverify.theory.protocols.random import random_kernel, within_budget
from dpverify.theory.protocols.transcripts import Transcripts
from dpverify.theory.symbols.rays import binary_mechanism, ray_matrix, rr_symbols

# A witness channel's entries are rounded to multiples of 2^-WITNESS_BITS before the exact
# DP repair (the value moves by about 2^-WITNESS_BITS m M / (lambda - 1), far below --tol)
WITNESS_BITS = 56
DEAD_OUTPUT = 1e-13  # an output no symbol uses with more probability is dropped
SNAP_DENOMINATOR = 10**6
SNAP_DISTANCE = 1e-12


def product_protocol(channels: Sequence[np.ndarray]) -> np.ndarray:
    """P = C_1 (x) ... (x) C_k (rows: inputs, columns: outputs, both mixed radix)."""
    P = np.ones((1, 1))
    for C in channels:
        P = np.kron(P, C)
    return P


def merged_outputs(C: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """The channel with outputs of proportional columns merged (summed) and unused ones
    dropped. Such outputs have the same likelihood ratios, so the merged output is a
    sufficient statistic: every agent's best accuracy is unchanged (Blackwell), and the
    search's label spaces stay small (a staircase channel has at most 2^m - 2 distinct
    columns, one per ray)."""
    C = np.asarray(C, dtype=float)
    totals = C.sum(axis=0)
    keep = totals > 1e-13
    C, totals = C[:, keep], totals[keep]
    directions = C / totals
    groups: list[int] = []
    out: list[np.ndarray] = []
    for o in range(C.shape[1]):
        for g, first in enumerate(groups):
            if np.abs(directions[:, o] - directions[:, first]).max() <= tol:
                out[g] = out[g] + C[:, o]
                break
        else:
            groups.append(o)
            out.append(C[:, o].copy())
    return np.stack(out, axis=1)


def coefficients(channels: Sequence[np.ndarray], values: np.ndarray, party: int,
                 alphabets: Sequence[int]) -> np.ndarray:
    """A_i[x, o_i] of the module docstring for party i (0-based `party`), given
    values[x, o] = sum_y Q[o, y] w(f(x), y) under the current rule."""
    k = len(channels)
    sizes = [C.shape[1] for C in channels]
    letters = string.ascii_letters
    xs, os_ = letters[:k], letters[k:2 * k]
    operands, subscripts = [], []
    for j, C in enumerate(channels):
        if j != party:
            operands.append(C)
            subscripts.append(xs[j] + os_[j])
    expr = ",".join(subscripts + [xs + os_]) + "->" + xs + os_[party]
    tensor = values.reshape(*alphabets, *sizes)
    return np.einsum(expr, *operands, tensor).reshape(-1, sizes[party])


def rr_channels(alphabets: Sequence[int], lambdas: Sequence[float]) -> list[np.ndarray]:
    return [rr_symbols(m, lam) for m, lam in zip(alphabets, lambdas, strict=True)]


def binary_channels(alphabets: Sequence[int], lambdas: Sequence[float], rng: np.random.Generator,
                    count: int) -> list[list[np.ndarray]]:
    """Binary mechanisms (KOV 2014) for every party, `count` combinations of their sets A
    (all of them when there are at most `count`; each set up to its complement)."""
    options = []
    for m, lam in zip(alphabets, lambdas, strict=True):
        subsets = [s for r in range(1, m) for s in itertools.combinations(range(m), r)
                   if 0 in s]  # A and its complement give the same mechanism
        options.append([binary_mechanism(m, lam, s) for s in subsets])
    total = math.prod(len(o) for o in options)
    if total <= count:
        return [list(c) for c in itertools.product(*options)]
    return [[o[int(rng.integers(len(o)))] for o in options] for _ in range(count)]


def support_weights(alphabets: Sequence[int], theta: np.ndarray) -> list[np.ndarray]:
    """For each party, the mass of the ray-product LP's solution theta[s, label] on each of
    its rays (summed over the other parties' rays and the labels): the rays its support
    uses (a start of the search: verifiers/multisymbol/search.py)."""
    counts = [(1 << m) - 2 for m in alphabets]
    mass = np.asarray(theta, dtype=float).clip(0.0, None).sum(axis=1).reshape(counts)
    return [mass.sum(axis=tuple(j for j in range(len(counts)) if j != i))
            for i in range(len(counts))]


def merged_channel(m: int, lam: float, theta: np.ndarray) -> np.ndarray:
    """One party alone: the LP's label columns sum_r theta[r, l] ray_r are a channel whose
    outputs are the decisions (KOV's merging of transcripts, read backwards); it reaches
    the LP's optimum, since the relaxation is exact for one party."""
    C = ray_matrix(m, lam) @ finite_mass(theta)
    return within_budget(clean_stochastic(C[:, C.sum(axis=0) > 1e-15]), lam)


def random_channels(alphabets: Sequence[int], lambdas: Sequence[float],
                    rng: np.random.Generator) -> list[np.ndarray]:
    """A random DP channel per party with 2 to m_i + 1 outputs (Dirichlet rows brought
    inside the DP cone by the least mixing with the uniform channel)."""
    return [random_kernel(rng, m, int(rng.integers(2, m + 2)), lam)
            for m, lam in zip(alphabets, lambdas, strict=True)]


# -- exact witnesses -------------------------------------------------------------------------
def exact_channel(C: np.ndarray, lam: Fraction, bits: int = WITNESS_BITS
                  ) -> list[list[Fraction]]:
    """A float channel made an exact lambda-DP channel. Outputs that no symbol uses are
    dropped. First, small rationals (each entry's nearest with denominator <= 10^6, each
    row completed on its largest entry) are kept when they are within 1e-12 of the floats
    and exactly DP, so that an exact optimum reads as itself (3/4, not a 56-bit dyadic).
    Otherwise entries are rounded down to multiples of 2^-bits, each row is completed to
    sum 1 on its largest entry, and the channel is mixed with the uniform one by the least
    dyadic t >= max over columns of d / (d + (lambda - 1) / M), d = max - lambda min, after
    which every column has max <= lambda min exactly."""
    lam = Fraction(lam)
    floats = finite_mass(C)
    floats = clean_stochastic(floats[:, floats.max(axis=0) > DEAD_OUTPUT])
    snapped = exact_stochastic(floats, rounding=snap(SNAP_DENOMINATOR), completion=LARGEST)
    if is_dp_channel(snapped, lam) and \
            np.abs(np.array(snapped, dtype=float) - floats).max() <= SNAP_DISTANCE:
        return snapped
    scale = 1 << bits
    rows = exact_stochastic(floats, rounding=dyadic(bits, floor=True), completion=LARGEST)
    M = len(rows[0])
    t = Fraction(0)
    for o in range(M):
        column = [row[o] for row in rows]
        d = max(column) - lam * min(column)
        if d > 0:
            t = max(t, Fraction(1) if lam == 1 else d / (d + (lam - 1) / M))
    if t > 0:
        t = min(Fraction(1), Fraction(math.ceil(t * scale), scale))
        rows = [[(1 - t) * v + t / M for v in row] for row in rows]
    return rows


def is_dp_channel(C: Sequence[Sequence[Fraction]], lam: Fraction) -> bool:
    """Exactly: rows are distributions and every column has max <= lambda min."""
    if any(v < 0 for row in C for v in row) or any(sum(row) != 1 for row in C):
        return False
    return all(max(col) <= lam * min(col) for col in zip(*C, strict=True))


def rr_exact_channels(alphabets: Sequence[int], lambdas: Sequence[Fraction]) -> list:
    from dpverify.theory.symbols.rays import rr_symbols_exact

    return [rr_symbols_exact(m, lam) for m, lam in zip(alphabets, lambdas, strict=True)]


def exact_transcripts(alphabets: Sequence[int], channels: Sequence[Sequence[Sequence[Fraction]]]
                      ) -> Transcripts:
    """The product protocol of exact channels as exact transcripts (integers over one
    common denominator), as the audit builds them from a protocol file."""
    P = np.ones((1, 1), dtype=object)
    den = 1
    for C in channels:
        d = math.lcm(*(Fraction(v).denominator for row in C for v in row))
        num = np.array([[int(Fraction(v) * d) for v in row] for row in C], dtype=object)
        P = np.kron(P, num)
        den *= d
    return Transcripts(tuple(alphabets), tuple(len(C[0]) for C in channels), P, den, True)
