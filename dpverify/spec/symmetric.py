"""The symmetries of a problem and its tables on orbits, without 2^k tables (pure, no I/O).

A function is *symmetric* (a function of the number of ones) when it is a count function
(spec/counts.py: a named function other than `bit:i`, a `{ counts = [...] }` table, or an
expression that uses only `sum(x)` and `k`).

The symmetry group of an agent (docs/theory.md, "Symmetry"): permutations of parties that
preserve the privacy levels, the agent's function and gain, and (for a party agent) the
agent's own index. It is described by a partition of the parties into *classes*: parties
inside a class may be permuted freely. For symmetric functions the classes are the parties
with equal privacy levels (the agent's own party alone); for `bit:i` party i is split off
too; for other functions (small k) they are found exactly on the tabulated gains, by
checking invariance under transpositions inside each privacy class.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.errors import SpecError
from dpverify.spec.counts import count_form as count_form  # re-exported
from dpverify.spec.counts import count_values, is_count_function
from dpverify.spec.expr import ExpressionError
from dpverify.spec.model import AgentSpec, AgentTable, MultipartySpec

# --------------------------------------------------------------------------- classes


def privacy_classes(spec: MultipartySpec) -> list[list[int]]:
    """Parties (1-based) grouped by equal privacy level: equal exact rationals given as
    `lambda`, or equal `epsilon` values; classes in order of their first party."""
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    assert keys is not None  # a spec has one of them
    groups: dict[Fraction, list[int]] = {}
    for i, key in enumerate(keys, start=1):
        groups.setdefault(key, []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


@dataclass(frozen=True)
class Symmetry:
    """A partition of the parties into classes (1-based indices, each sorted, classes in
    order of their first party) such that permuting parties inside a class preserves the
    privacy levels, the agent's gains and the agent's own index (found from the function's
    form, or by tabulation)."""

    classes: tuple[tuple[int, ...], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.classes)

    @property
    def orbit_count(self) -> int:
        out = 1
        for n in self.sizes:
            out *= n + 1
        return out

    @property
    def trivial(self) -> bool:
        return all(len(c) == 1 for c in self.classes)


_SYMMETRIES: weakref.WeakKeyDictionary[MultipartySpec, dict[str, Symmetry | None]] = (
    weakref.WeakKeyDictionary())


def _split(classes: list[list[int]], party: int) -> list[list[int]]:
    """Party `party` (if > 0) moved into a class of its own."""
    if party == 0:
        return classes
    out = [[i for i in c if i != party] for c in classes]
    out = [c for c in out if c] + [[party]]
    return sorted(out, key=lambda g: g[0])


def agent_symmetry(spec: MultipartySpec, agent: AgentSpec) -> Symmetry | None:
    """The symmetry classes of `agent` (see Symmetry); None when the function is neither
    structurally symmetric nor small enough to tabulate."""
    cache = _SYMMETRIES.setdefault(spec, {})
    if agent.name in cache:
        return cache[agent.name]
    classes = _split(privacy_classes(spec), agent.party)
    fn = agent.function
    out: Symmetry | None
    if is_count_function(fn):
        out = Symmetry(tuple(tuple(c) for c in classes))
    elif fn.kind == "named" and fn.name == "bit":
        out = Symmetry(tuple(tuple(c) for c in _split(classes, fn.param)))
    else:
        out = _detected(spec, agent, classes)
    cache[agent.name] = out
    return out


def _detected(spec: MultipartySpec, agent: AgentSpec, classes: list[list[int]]
              ) -> Symmetry | None:
    """Classes found exactly on the tabulated gains: parties i, j of one privacy class are
    joined when swapping x_i and x_j leaves every gain row unchanged; transpositions
    generate the symmetric group of each joined block (union-find)."""
    from dpverify.spec.tables import MAX_TABULATED_PARTIES, tabulate

    k = spec.parties
    if k > MAX_TABULATED_PARTIES:
        return None
    groups = swap_blocks(tabulate(spec, agent).gain_exact, k, classes)
    return Symmetry(tuple(tuple(g) for g in groups))


def swap_blocks(rows: Sequence[Sequence[Fraction]], k: int, classes: list[list[int]]
                ) -> list[list[int]]:
    """The blocks of parties that may be permuted: i, j of one class are joined when
    swapping x_i and x_j leaves every row (one per input, x1 most significant) unchanged;
    transpositions generate the symmetric group of each joined block (union-find). Every
    party of 1..k is in exactly one block, in order of their first party."""
    codes: dict[tuple, int] = {}
    code = np.array([codes.setdefault(tuple(r), len(codes)) for r in rows])
    index = np.arange(1 << k)
    parent = list(range(k + 1))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for cls in classes:
        for a, i in enumerate(cls):
            for j in cls[a + 1:]:
                if find(i) == find(j):
                    continue
                bi, bj = k - i, k - j
                differ = ((index >> bi) & 1) != ((index >> bj) & 1)
                swapped = np.where(differ, index ^ ((1 << bi) | (1 << bj)), index)
                if np.array_equal(code, code[swapped]):
                    parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(1, k + 1):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


# --------------------------------------------------------------------------- orbits


def orbit_weights(sizes: tuple[int, ...], index: int) -> tuple[int, ...]:
    """The weights (ones per class) of orbit `index` (mixed radix, first class first)."""
    out = []
    for n in reversed(sizes):
        index, w = divmod(index, n + 1)
        out.append(w)
    return tuple(reversed(out))


def representative(symmetry: Symmetry, weights: tuple[int, ...], k: int) -> int:
    """The first input (x1 most significant) of the orbit: in each class, the ones go to the
    parties of smallest index."""
    x = 0
    for cls, w in zip(symmetry.classes, weights, strict=True):
        for i in cls[:w]:
            x |= 1 << (k - i)
    return x


def orbit_function_values(spec: MultipartySpec, agent: AgentSpec, symmetry: Symmetry
                          ) -> list[Fraction]:
    """f on every orbit (in orbit order), without tabulating when f is a count function."""
    fn, k = agent.function, spec.parties
    sizes = symmetry.sizes
    count = symmetry.orbit_count
    if is_count_function(fn):
        values = count_values(fn, k)
        return [values[sum(orbit_weights(sizes, o))] for o in range(count)]
    if fn.kind == "named" and fn.name == "bit":
        where = next(c for c, cls in enumerate(symmetry.classes) if cls == (fn.param,))
        return [Fraction(orbit_weights(sizes, o)[where]) for o in range(count)]
    from dpverify.spec.tables import tabulate

    table = tabulate(spec, agent)
    return [table.values[representative(symmetry, orbit_weights(sizes, o), k)]
            for o in range(count)]


_ORBIT_TABLES: weakref.WeakKeyDictionary[
    MultipartySpec, dict[tuple[str, tuple[tuple[int, ...], ...]], AgentTable]] = (
    weakref.WeakKeyDictionary())


def orbit_table(spec: MultipartySpec, agent: AgentSpec, symmetry: Symmetry) -> AgentTable:
    """The agent's function and gains on every orbit of `symmetry` (an AgentTable whose rows
    are orbits, in orbit order), computed once per (spec, agent, classes): the orbit order
    depends on the classes, so two symmetries never share a table. Errors are SpecErrors
    naming the key."""
    cache = _ORBIT_TABLES.setdefault(spec, {})
    key = (agent.name, symmetry.classes)
    cached = cache.get(key)
    if cached is not None:
        return cached
    from dpverify.spec.tables import table_of

    fn_key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    try:
        values = orbit_function_values(spec, agent, symmetry)
    except ExpressionError as exc:
        raise SpecError(spec.source, fn_key, agent.function.text, str(exc)) from None
    table = table_of(agent, tuple(values), spec.source)
    cache[key] = table
    return table


# ------------------------------------------------------ orbits of every input (k small)
# The symmetry on all 2^k inputs, for the certificate on all inputs: the worst-case
# decision LP of randomized response (KOV 2015, eqs. 4, 6) is invariant under every
# permutation g of parties that preserves the privacy levels, the agent (a party's own
# index is fixed) and the gain table: P[gx, g tau] = P[x, tau]. Averaging an optimal
# solution over the group keeps it optimal (the LP is convex), so an optimal rule constant
# on tau-orbits and an optimal prior constant on x-orbits exist (docs/theory.md,
# "Symmetry"). The classes come from the tabulated gains here (swap_blocks), as
# agent_symmetry finds them for other functions.
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



def symmetry_orbits(keys: Sequence[object], gain_exact: Sequence[Sequence[Fraction]],
                    party: int) -> Orbits:
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

