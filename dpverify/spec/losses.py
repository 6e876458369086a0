"""The count consumer's loss tabulated: l(i, r) for answers i and releases r (pure, no I/O).

Gupte-Sundararajan section 2.2: the named losses are abs |i - r|, square (i - r)^2 and
indicator [i != r]; a file may also give an expression over i, r and n, or a matrix.
"""

from __future__ import annotations

import math
import weakref
from fractions import Fraction

import numpy as np

from dpverify.errors import SpecError
from dpverify.spec.count_model import CountSpec
from dpverify.spec.expr import ExpressionError, compile_expression
from dpverify.spec.expr_grid import evaluate_grid

LOSS_NAMES = ("i", "r", "n")

# Tables computed once per spec object (a spec is frozen; the cache lives beside it).
_TABLES: weakref.WeakKeyDictionary[CountSpec, np.ndarray] = weakref.WeakKeyDictionary()


def named_loss(name: str, n: int) -> np.ndarray:
    """abs |i-r|, square (i-r)^2, indicator [i != r] (GS section 2.2), as exact integers."""
    i = np.arange(n + 1)[:, None]
    r = np.arange(n + 1)[None, :]
    if name == "abs":
        out = np.abs(i - r)
    elif name == "square":
        out = (i - r) ** 2
    elif name == "indicator":
        out = (i != r).astype(np.int64)
    else:
        raise ValueError(f"unknown loss {name!r}")
    return _shared_fractions(out)


def _shared_fractions(grid: np.ndarray) -> np.ndarray:
    """An integer grid as an object array of Fractions, one object per distinct value
    (theory/units.py and loss_table then work once per value, not once per entry)."""
    exact = {v: Fraction(v) for v in np.unique(grid).tolist()}
    table = np.empty(grid.shape, dtype=object)
    for i, row in enumerate(grid.tolist()):
        table[i, :] = [exact[v] for v in row]
    return table


def loss_table(spec: CountSpec) -> np.ndarray:
    """l(i, r) for every true answer i and release r: an (n+1) x (n+1) object array of
    exact rationals (computed once per spec). Expression failures are SpecErrors."""
    cached = _TABLES.get(spec)
    if cached is not None:
        return cached
    n, loss = spec.n, spec.loss
    key = "consumer.loss"
    if loss.kind == "named":
        table = named_loss(loss.name, n)
    elif loss.kind == "matrix":
        table = np.empty((n + 1, n + 1), dtype=object)
        for i, row in enumerate(loss.matrix):
            for r, v in enumerate(row):
                table[i, r] = v
    else:
        table = _expression_table(spec)
    checked: set[int] = set()  # ids of the entries found finite (the table keeps them)
    for (i, r), v in np.ndenumerate(table):
        if id(v) in checked:
            continue
        if not math.isfinite(_to_float(v)):
            raise SpecError(spec.source, key, str(v),
                            f"l({i}, {r}) is too large for a float (at most about 1e308)")
        checked.add(id(v))
    _TABLES[spec] = table
    return table


def _expression_table(spec: CountSpec) -> np.ndarray:
    """An expression loss at every (i, r): on the whole grid at once where that is exact
    (spec/expr_grid.py: integer arithmetic within int64), else point by point, where a
    failure names its point."""
    n, text = spec.n, spec.loss.text
    expression = compile_expression(text, LOSS_NAMES)
    points = np.arange(n + 1)
    grid = evaluate_grid(expression, {"i": points[:, None], "r": points[None, :], "n": n})
    if grid is not None:
        return _shared_fractions(grid)
    table = np.empty((n + 1, n + 1), dtype=object)
    for i in range(n + 1):
        for r in range(n + 1):
            try:
                table[i, r] = Fraction(expression.evaluate({"i": i, "r": r, "n": n}))
            except ExpressionError as exc:
                raise SpecError(spec.source, "consumer.loss.expr", text,
                                f"fails at i = {i}, r = {r}: {exc}") from None
    return table


def _to_float(v: Fraction) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.inf
