"""Functions of the number of ones (the file format's symmetric functions), without 2^k
tables (pure, no I/O).

A function is a *count function* when it is a named function other than `bit:i`, a
`{ counts = [...] }` table, or an expression that uses only `sum(x)` and `k` (recognised
from its syntax tree). For those, `count_values` gives F(0), ..., F(k) in O(k) evaluations,
at any k. This is format semantics: the loader, the construction (spec/symmetric.py) and the
independent checker (dpverify/checker/) all read it here.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from dpverify.spec.expr import ExpressionError, compile_expression
from dpverify.spec.functions import named_count_value
from dpverify.spec.model import FunctionDef

COUNT_NAME = "c"  # the number of ones, in the rewritten form of a sum(x)-only expression


def count_form(text: str) -> str | None:
    """The expression over `c` (the number of ones) and `k` when it uses the inputs only
    through `sum(x)`, else None: each `sum(x)` replaced by `c` in the user's own text
    (ast.unparse could lengthen it past the evaluator's limits), checked when compiled."""
    body = text.strip().replace("\r\n", "\n").replace("\r", "\n")  # the parser's lines
    try:
        tree = ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if any(isinstance(n, ast.Name) and n.id == COUNT_NAME for n in ast.walk(tree)):
        return None  # a name `c` of the user's own: not the count
    rewrite = _CountRewrite()
    rewrite.visit(tree)
    if not rewrite.ok:
        return None
    raw, starts, out, last = body.encode("utf-8"), [0], [], 0
    for piece in raw.split(b"\n")[:-1]:
        starts.append(starts[-1] + len(piece) + 1)
    for line, col, end_line, end_col in sorted(rewrite.spans):  # columns in UTF-8 bytes
        out += [raw[last:starts[line - 1] + col], COUNT_NAME.encode()]
        last = starts[end_line - 1] + end_col
    return b"".join([*out, raw[last:]]).decode("utf-8")


class _CountRewrite(ast.NodeVisitor):
    """The spans of the calls sum(x); any other use of the inputs makes `ok` False."""

    def __init__(self) -> None:
        self.ok, self.spans = True, list[tuple]()

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id == "sum" and len(node.args) == 1
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "x"
                and not node.keywords):
            self.spans.append((node.lineno, node.col_offset, node.end_lineno,
                               node.end_col_offset))
            return
        for child in [*node.args, *node.keywords]:  # the callee's name is no input
            self.visit(child)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id != "k":
            self.ok = False


def is_count_function(fn: FunctionDef) -> bool:
    """Whether f(x) depends on x only through the number of ones."""
    if fn.kind == "named":
        return fn.name != "bit"
    if fn.kind == "counts":
        return True
    return fn.kind == "expr" and count_form(fn.text) is not None


_COUNT_VALUES: dict[tuple, tuple[Fraction, ...]] = {}


def count_values(fn: FunctionDef, k: int) -> tuple[Fraction, ...]:
    """F(0), ..., F(k) for a count function (is_count_function), computed once per
    (function, k) for the construction; ExpressionError when the expression fails at some
    count. The checker calls evaluate_counts (no cache)."""
    key = (fn, k)
    cached = _COUNT_VALUES.get(key)
    if cached is not None:
        return cached
    out = evaluate_counts(fn, k)
    if len(_COUNT_VALUES) > 64:
        _COUNT_VALUES.clear()
    _COUNT_VALUES[key] = out
    return out


def evaluate_counts(fn: FunctionDef, k: int) -> tuple[Fraction, ...]:
    """F(0), ..., F(k) for a count function, evaluated afresh (no cache); ExpressionError
    when the expression fails at some count, ValueError when fn is not a count function."""
    if fn.kind == "named":
        return tuple(Fraction(named_count_value(fn.name, fn.param, c, k))
                     for c in range(k + 1))
    if fn.kind == "counts":
        return tuple(fn.values)
    text = count_form(fn.text) if fn.kind == "expr" else None
    if text is None:
        raise ValueError("not a function of sum(x) and k")
    expression = compile_expression(text, [COUNT_NAME, "k"])
    values = []
    for c in range(k + 1):
        try:
            values.append(Fraction(expression.evaluate({COUNT_NAME: c, "k": k})))
        except ExpressionError as exc:
            raise ExpressionError(f"fails at sum(x) = {c}: {exc}") from None
    return tuple(values)
