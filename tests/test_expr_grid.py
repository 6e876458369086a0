"""Tests for dpverify.spec.expr_grid: an expression on a whole grid at once must equal the
exact evaluator point by point, or decline (None) so that the caller evaluates point by
point."""

from __future__ import annotations

import doctest
from fractions import Fraction

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dpverify.errors import SpecError
from dpverify.spec import expr_grid, losses
from dpverify.spec.expr import ExpressionError, compile_expression
from dpverify.spec.expr_grid import evaluate_grid
from dpverify.spec.loader import loads as loads_count

NAMES = ["i", "r", "n"]
N = 7  # the grid is (N + 1) x (N + 1): i, r in 0..N, n = N


def grid_of(text: str) -> np.ndarray | None:
    points = np.arange(N + 1)
    return evaluate_grid(compile_expression(text, NAMES),
                         {"i": points[:, None], "r": points[None, :], "n": N})


def pointwise(text: str) -> list[list[object]]:
    """The exact evaluator at every point: a number, or the error's class."""
    expression = compile_expression(text, NAMES)
    out = []
    for i in range(N + 1):
        row = []
        for r in range(N + 1):
            try:
                row.append(expression.evaluate({"i": i, "r": r, "n": N}))
            except ExpressionError:
                row.append(ExpressionError)
        out.append(row)
    return out


def agrees(grid: np.ndarray, exact: list[list[object]]) -> bool:
    """Every point of the grid equals the exact value there (an exact failure anywhere
    is a disagreement: the grid must have declined)."""
    return all(type(e) is int and int(g) == e
               for g_row, e_row in zip(grid.tolist(), exact, strict=True)
               for g, e in zip(g_row, e_row, strict=True))


# Forms that problem files use; the grid must take all of them (the fast path is real).
TAKEN = [
    "abs(i - r)", "(i - r) ** 2", "min(abs(i - r), 5)", "2 * (r - i) if r > i else i - r",
    "i != r", "0 if i == r else 1", "max(i, r, 3) - min([i, r])", "(i - r) // 3",
    "(i - r) % 3", "-(i - r) // -2", "(r - i) % -4", "i and r", "i or r", "not i",
    "~i", "0 < i < r", "i < r <= 5 != i", "i ^ r", "i & r | 1", "sum([i, r, n])",
    "True + i", "2.0 * i", "i ** 0", "n - abs(i - r)", "+i - -r",
    "1 // (i - r) if i != r else 0",  # (declines: a zero divisor in the branch not taken)
]


@pytest.mark.parametrize("text", TAKEN)
def test_grid_equals_the_exact_evaluator(text):
    grid = grid_of(text)
    if text.startswith("1 // (i - r)"):
        assert grid is None
        return
    assert grid is not None, text
    assert grid.shape == (N + 1, N + 1)
    assert agrees(grid, pointwise(text)), text


@pytest.mark.parametrize("text", [
    "i / 2",  # exact rational division
    "i // (r - 1)",  # a zero divisor at r = 1: the exact evaluator names it
    "i % (r - r)",
    "i ** -1",  # a fraction
    "i ** r",  # an exponent that varies over the grid
    "0.5 * i",  # a fraction constant
    "2 ** 70 + i",  # beyond int64
    "i ** 30 * r ** 30",  # bounds multiply past 2^62
    "(i + 1) ** 300",  # the exact evaluator's exponent limit
    "min(i)",  # a tuple needed
    # each of these passes 2^62 at one node, which numpy's int64 would wrap
    "3037000500 * 3037000500 + i", "4611686018427387903 + i",
    "sum([4611686018427387903, i])", "~4611686018427387903 + i",
    "(-4611686018427387903) - i", "(i + 2 ** 31) * (r + 2 ** 31)",
])
def test_grid_declines_what_it_cannot_do_exactly(text):
    assert grid_of(text) is None


def test_a_check_that_would_catch_c_style_division():
    """Negative control: `agrees` catches a grid that divides like C (truncation), which
    differs from Python's floor on negative operands."""
    points = np.arange(N + 1)
    truncated = np.trunc((points[:, None] - points[None, :]) / 3).astype(np.int64)
    exact = pointwise("(i - r) // 3")
    assert not agrees(truncated, exact)
    grid = grid_of("(i - r) // 3")
    assert grid is not None and agrees(grid, exact)


_atoms = st.sampled_from(["i", "r", "n", "0", "1", "2", "3", "-2"])


def _join(parts: tuple[str, str, str]) -> str:
    a, op, b = parts
    return f"({a} {op} {b})"


_expressions = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%", "^", "&", "|", "<",
                                          "==", "!=", ">=", "and", "or"]), inner).map(_join),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(inner, inner).map(lambda t: f"min({t[0]}, {t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"max([{t[0]}, {t[1]}])"),
        inner.map(lambda t: f"abs({t})"),
        inner.map(lambda t: f"(-{t})"),
        inner.map(lambda t: f"({t}) ** 2"),
        inner.map(lambda t: f"(not {t})"),
    ),
    max_leaves=8,
)


@settings(max_examples=examples(400), deadline=None)
@given(_expressions)
def test_random_expressions_agree_or_decline(text):
    grid = grid_of(text)
    exact = pointwise(text)
    if grid is None:
        return  # declined: the caller evaluates point by point
    assert agrees(grid, exact), text


def test_most_random_expressions_are_taken():
    """The grid path is not a path that always declines (then the test above proves
    nothing): of these, only the ones with a zero divisor somewhere decline."""
    taken = [t for t in ("(i * r) // (n + 1)", "((i - r) ** 2) % 5", "(i | r) - (i & r)",
                         "min(i, r) if i >= 2 else max(i, 3)")
             if grid_of(t) is not None]
    assert len(taken) == 4


def test_the_module_examples():
    assert doctest.testmod(expr_grid).failed == 0


COUNT = """[problem]
name = "grid"
kind = "count"
n = {n}
epsilon = 0.5

[consumer]
loss = {{ expr = "{expr}" }}
"""


@pytest.mark.parametrize(("text", "on_grid"), [
    ("2 * (r - i) if r > i else i - r", True), ("min(abs(i - r), 5)", True),
    ("1 // (i - r) if i != r else 0", False), ("(i - r) ** 2 / n", False)])
def test_the_loss_table_is_the_same_either_way(text, on_grid, monkeypatch):
    points = np.arange(13)
    taken = evaluate_grid(compile_expression(text, NAMES),
                          {"i": points[:, None], "r": points[None, :], "n": 12})
    assert (taken is not None) == on_grid  # the two paths are both compared
    spec = loads_count(COUNT.format(n=12, expr=text))
    fast = losses.loss_table(spec)
    monkeypatch.setattr(losses, "evaluate_grid", lambda *a, **k: None)
    slow = losses.loss_table(loads_count(COUNT.format(n=12, expr=text)))
    assert fast.shape == slow.shape == (13, 13)
    assert all(type(v) is Fraction for v in fast.ravel())
    assert fast.tolist() == slow.tolist()


def test_a_failing_point_is_still_named():
    with pytest.raises(SpecError, match=r"fails at i = 0, r = 3: division by zero"):
        loads_count(COUNT.format(n=5, expr="i // (r - 3)"))
