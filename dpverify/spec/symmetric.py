"""Symmetric functions and the symmetries of a problem, without 2^k tables (pure, no I/O).

A function is *symmetric* (a function of the number of ones) when it is a named function
other than `bit:i`, a `{ counts = [...] }` table, or an expression that uses only `sum(x)`
and `k` (recognised from its syntax tree). For those, `count_values` gives F(0), ..., F(k)
in O(k) evaluations, at any k.

The symmetry group of an agent (docs/theory.md, "Symmetry"): permutations of parties that
preserve the privacy levels, the agent's function and gain, and (for a party agent) the
agent's own index. It is described by a partition of the parties into *classes*: parties
inside a class may be permuted freely. For symmetric functions the classes are the parties
with equal privacy levels (the agent's own party alone); for `bit:i` party i is split off
too; for other functions (small k) they are found exactly on the tabulated gains, by
checking invariance under transpositions inside each privacy class.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpverify.errors import SpecError
from dpverify.spec.expr import ExpressionError, compile_expression
from dpverify.spec.model import AgentSpec, AgentTable, FunctionDef, MultipartySpec

COUNT_NAME = "c"  # the number of ones, in the rewritten form of a sum(x)-only expression


def count_form(text: str) -> str | None:
    """The expression rewritten over `c` (the number of ones) and `k`, when it uses the
    inputs only through `sum(x)`; None otherwise (it names x1, ..., or uses x elsewhere).
    The rewritten text is still checked by the safe evaluator when it is compiled."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    if any(isinstance(n, ast.Name) and n.id == COUNT_NAME for n in ast.walk(tree)):
        return None  # a name `c` of the user's own: not the count
    rewrite = _CountRewrite()
    body = rewrite.visit(tree)
    return ast.unparse(body) if rewrite.ok else None


class _CountRewrite(ast.NodeTransformer):
    """sum(x) -> c; any other use of the inputs (x, x1, ...) makes `ok` False."""

    ok = True

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if (isinstance(node.func, ast.Name) and node.func.id == "sum" and len(node.args) == 1
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "x"
                and not node.keywords):
            return ast.copy_location(ast.Name(id=COUNT_NAME, ctx=ast.Load()), node)
        node.args = [self.visit(arg) for arg in node.args]  # the callee's name is no input
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != "k":
            self.ok = False
        return node


def is_count_function(fn: FunctionDef) -> bool:
    """Whether f(x) depends on x only through the number of ones."""
    if fn.kind == "named":
        return fn.name != "bit"
    if fn.kind == "counts":
        return True
    return fn.kind == "expr" and count_form(fn.text) is not None


def named_count_value(name: str, param: int, count: int, k: int) -> int:
    """The named symmetric functions of the format, as functions of the count of ones."""
    if name == "xor":
        return count % 2
    if name == "and":
        return int(count == k)
    if name == "or":
        return int(count > 0)
    if name == "majority":
        return int(2 * count > k)
    if name == "sum":
        return count
    if name == "threshold":
        return int(count >= param)
    raise ValueError(f"{name!r} is not a function of the count of ones")


_COUNT_VALUES: dict[tuple, tuple[Fraction, ...]] = {}


def count_values(fn: FunctionDef, k: int) -> tuple[Fraction, ...]:
    """F(0), ..., F(k) for a count function (is_count_function); ExpressionError when the
    expression fails at some count."""
    key = (fn, k)
    cached = _COUNT_VALUES.get(key)
    if cached is not None:
        return cached
    if fn.kind == "named":
        out = tuple(Fraction(named_count_value(fn.name, fn.param, c, k)) for c in range(k + 1))
    elif fn.kind == "counts":
        out = tuple(fn.values)
    else:
        text = count_form(fn.text)
        if text is None:
            raise ValueError("not a function of sum(x) and k")
        expression = compile_expression(text, [COUNT_NAME, "k"])
        values = []
        for c in range(k + 1):
            try:
                values.append(Fraction(expression.evaluate({COUNT_NAME: c, "k": k})))
            except ExpressionError as exc:
                raise ExpressionError(f"fails at sum(x) = {c}: {exc}") from None
        out = tuple(values)
    if len(_COUNT_VALUES) > 64:
        _COUNT_VALUES.clear()
    _COUNT_VALUES[key] = out
    return out


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
    privacy levels, the agent's gains and the agent's own index. `structural` is True when
    it follows from the function's form (no tabulation was needed)."""

    classes: tuple[tuple[int, ...], ...]
    structural: bool

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
        out = Symmetry(tuple(tuple(c) for c in classes), True)
    elif fn.kind == "named" and fn.name == "bit":
        out = Symmetry(tuple(tuple(c) for c in _split(classes, fn.param)), True)
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
    return Symmetry(tuple(tuple(g) for g in groups), False)


def swap_blocks(rows, k: int, classes: list[list[int]]) -> list[list[int]]:
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


_ORBIT_TABLES: weakref.WeakKeyDictionary[MultipartySpec, dict[str, AgentTable]] = (
    weakref.WeakKeyDictionary())


def orbit_table(spec: MultipartySpec, agent: AgentSpec, symmetry: Symmetry) -> AgentTable:
    """The agent's function and gains on every orbit (an AgentTable whose rows are orbits,
    in orbit order), computed once; errors are SpecErrors naming the key."""
    cache = _ORBIT_TABLES.setdefault(spec, {})
    cached = cache.get(agent.name)
    if cached is not None:
        return cached
    from dpverify.spec.tables import table_of

    key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    try:
        values = orbit_function_values(spec, agent, symmetry)
    except ExpressionError as exc:
        raise SpecError(spec.source, key, agent.function.text, str(exc)) from None
    table = table_of(agent, tuple(values), spec.source)
    cache[agent.name] = table
    return table
