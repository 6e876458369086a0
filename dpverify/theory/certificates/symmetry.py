"""Symmetries of a problem: orbits of inputs under permutations of equal-privacy parties.

The worst-case decision LP of randomized response (KOV 2015, eqs. 4, 6) is invariant under
every permutation g of parties that preserves the privacy levels, the agent (a party's own
index is fixed) and the gain table: P[gx, g tau] = P[x, tau]. Averaging an optimal solution
over the group keeps it optimal (the LP is convex), so an optimal rule constant on
tau-orbits and an optimal prior constant on x-orbits exist (docs/theory.md, "Symmetry").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.spec.symmetric import swap_blocks


@dataclass(frozen=True, eq=False)
class Orbits:
    """Orbits of the inputs under the problem's symmetry group (parties with equal lambda
    whose swap leaves the agent's gain table unchanged; the agent's own party is fixed).

    `ids[x]` is the orbit of input x, `reps[o]` its first member, `sizes[o]` its size.
    The trivial partition (every input its own orbit) is always valid.
    """

    ids: np.ndarray
    reps: np.ndarray
    sizes: np.ndarray
    blocks: tuple[tuple[int, ...], ...]

    @property
    def count(self) -> int:
        return int(self.reps.size)



def symmetry_orbits(keys: Sequence, gain_exact, party: int) -> Orbits:
    """Orbits under the parties that can be permuted: i, j (not the agent's own party) with
    equal privacy `keys` (exact lambdas or epsilons) and gain[x] = gain[swap_ij(x)] for
    every x. Transpositions generate the symmetric group of each connected block.

    RR's worst-case LP is invariant under such permutations (P[gx, g tau] = P[x, tau]), so
    averaging an optimal solution over the group keeps it optimal: an optimal rule constant
    on tau-orbits and an optimal prior constant on x-orbits exist.
    """
    k = len(keys)
    n = 1 << k
    index = np.arange(n)
    classes: dict = {}
    for i in range(1, k + 1):
        if i != party:
            classes.setdefault(keys[i - 1], []).append(i)
    groups = swap_blocks(gain_exact, k, list(classes.values()))
    blocks = tuple(tuple(g) for g in groups if len(g) > 1)
    # orbit key: the number of ones in each block, and every other party's own bit
    in_block = {i for b in blocks for i in b}
    key = np.zeros(n, dtype=np.int64)
    for b in blocks:
        ones = sum(((index >> (k - i)) & 1) for i in b)
        key = key * (len(b) + 1) + ones
    for i in range(1, k + 1):
        if i not in in_block:
            key = key * 2 + ((index >> (k - i)) & 1)
    _, reps, ids = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(reps)  # number orbits by their first member
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    ids = rank[ids]
    reps = reps[order]
    sizes = np.bincount(ids, minlength=reps.size)
    return Orbits(ids=ids, reps=reps, sizes=sizes, blocks=blocks)


def trivial_orbits(k: int) -> Orbits:
    n = 1 << k
    idx = np.arange(n)
    return Orbits(ids=idx, reps=idx, sizes=np.ones(n, dtype=np.int64), blocks=())


def lift_rule(orbits: Orbits, rows: list[list[Fraction]]) -> list[tuple[Fraction, ...]]:
    """A rule per tau-orbit as a rule on every tau (each decides as its orbit)."""
    return [tuple(rows[o]) for o in orbits.ids.tolist()]


def orbit_members(orbits: Orbits) -> list[list[int]]:
    """The inputs of every orbit, in input order."""
    out: list[list[int]] = [[] for _ in range(orbits.count)]
    for x, o in enumerate(orbits.ids.tolist()):
        out[o].append(x)
    return out

