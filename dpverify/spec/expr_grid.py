"""A validated expression (dpverify.spec.expr) evaluated on a whole grid of integers at
once, with numpy, where that provably gives what the exact evaluator gives point by point.

The exact evaluator walks its closures once per point: a count consumer's loss at n = 200
is 40,401 walks (about 0.25 s). On a grid, every syntax node is one numpy operation on
int64 arrays. That is exact only for integer arithmetic that never leaves int64, so every
node carries a bound on the absolute value of its results, computed in Python integers
*before* the operation; where a bound would pass 2^62, or where a node leaves the
integers (`/`, a negative power, a fraction constant), or where a division meets a zero
(the exact evaluator names the point), `evaluate_grid` returns None and the caller
evaluates point by point. Python's semantics are kept: `//` and `%` floor like Python's
(numpy's integer floor_divide and remainder do), `and`/`or` give the deciding operand,
comparisons give 1 or 0, `a if c else b` picks per point. Both branches of a conditional
are computed, which is harmless: a branch can only fail by a zero divisor or a bound, and
either sends the whole grid back to the exact evaluator.

    >>> import numpy as np
    >>> from dpverify.spec.expr import compile_expression
    >>> e = compile_expression("2 * (r - i) if r > i else i - r", ["i", "r", "n"])
    >>> evaluate_grid(e, {"i": np.arange(3)[:, None], "r": np.arange(3)[None, :], "n": 2})
    array([[0, 2, 4],
           [1, 0, 2],
           [2, 1, 0]])
    >>> evaluate_grid(compile_expression("i / 2", ["i"]), {"i": np.arange(3)}) is None
    True
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import reduce

import numpy as np

from dpverify.spec.expr import Expression
from dpverify.spec.expr_values import MAX_EXPONENT

__all__ = ["evaluate_grid"]

LIMIT = 1 << 62  # every bound stays below this: int64 never overflows


class _Unsupported(Exception):
    """This node is not integer arithmetic within int64: evaluate point by point."""


_Value = tuple[np.ndarray, int]  # (int64 values, bound on their absolute value)


def evaluate_grid(expression: Expression, env: Mapping[str, np.ndarray | int]
                  ) -> np.ndarray | None:
    """The expression at every point of the grid that `env`'s arrays broadcast to (each
    name an integer array or an int), as an int64 array; None where the grid evaluation
    is not certain to equal the exact one (the caller then evaluates point by point)."""
    values: dict[str, _Value] = {}
    for name, raw in env.items():
        array = np.asarray(raw)
        if array.dtype.kind not in "iub":
            return None
        bound = max((abs(v) for v in array.ravel().tolist()), default=0)
        if bound >= LIMIT:
            return None
        values[name] = (array.astype(np.int64), bound)
    try:
        tree = ast.parse(expression.text.strip(), mode="eval")
        result, _ = _Grid(values).build(tree.body)
    except _Unsupported:
        return None
    shape = np.broadcast_shapes(*(v.shape for v, _ in values.values())) if values else ()
    return np.broadcast_to(result, shape).copy()


class _Grid:
    def __init__(self, names: Mapping[str, _Value]):
        self.names = names

    def build(self, node: ast.expr) -> _Value:
        method = getattr(self, type(node).__name__.lower(), None)
        if method is None:
            raise _Unsupported
        return method(node)

    @staticmethod
    def _within(bound: int) -> int:
        """`bound`, checked below LIMIT before the operation it bounds is done."""
        if bound >= LIMIT:
            raise _Unsupported
        return bound

    # -- leaves

    def constant(self, node: ast.Constant) -> _Value:
        value = node.value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, bool | int):
            raise _Unsupported  # a fraction: the exact evaluator's Fraction
        value = int(value)
        if abs(value) >= LIMIT:
            raise _Unsupported
        return np.asarray(value, dtype=np.int64), abs(value)

    def name(self, node: ast.Name) -> _Value:
        if node.id not in self.names:
            raise _Unsupported
        return self.names[node.id]

    # -- operators

    def unaryop(self, node: ast.UnaryOp) -> _Value:
        a, bound = self.build(node.operand)
        if isinstance(node.op, ast.Not):
            return (a == 0).astype(np.int64), 1
        if isinstance(node.op, ast.USub):
            return -a, bound
        if isinstance(node.op, ast.UAdd):
            return a, bound
        return ~a, self._within(bound + 1)  # ast.Invert: ~n == -n - 1

    def binop(self, node: ast.BinOp) -> _Value:
        (a, ba), (b, bb) = self.build(node.left), self.build(node.right)
        op = node.op
        if isinstance(op, ast.Add | ast.Sub):
            bound = self._within(ba + bb)
            return (a + b if isinstance(op, ast.Add) else a - b), bound
        if isinstance(op, ast.Mult):
            bound = self._within(ba * bb)
            return a * b, bound
        if isinstance(op, ast.FloorDiv | ast.Mod):
            if np.any(b == 0):
                raise _Unsupported  # the exact evaluator names the point
            if isinstance(op, ast.FloorDiv):  # |floor(a / b)| <= |a| for |b| >= 1
                return np.floor_divide(a, b), ba
            return np.remainder(a, b), bb  # |a % b| < |b|
        if isinstance(op, ast.Pow):
            return self._power(a, ba, b)
        if isinstance(op, ast.BitXor | ast.BitAnd | ast.BitOr):
            bound = self._within(1 << (max(ba.bit_length(), bb.bit_length()) + 1))
            fn = {ast.BitXor: np.bitwise_xor, ast.BitAnd: np.bitwise_and,
                  ast.BitOr: np.bitwise_or}[type(op)]
            return fn(a, b), bound
        raise _Unsupported  # `/` (exact rational division) and anything else

    def _power(self, a: np.ndarray, ba: int, b: np.ndarray) -> _Value:
        if np.ndim(b) != 0:
            raise _Unsupported  # an exponent that varies over the grid
        exponent = int(b)
        if exponent < 0 or exponent > MAX_EXPONENT:
            raise _Unsupported  # a fraction, or the exact evaluator's refusal
        if ba > 1 and ba.bit_length() * exponent > 64:
            raise _Unsupported
        bound = self._within(ba ** exponent)
        return np.power(a, exponent), bound

    def boolop(self, node: ast.BoolOp) -> _Value:
        """`and` / `or`: the deciding operand, point by point (Python's semantics)."""
        parts = [self.build(value) for value in node.values]
        result, bound = parts[0]
        for value, b in parts[1:]:
            if isinstance(node.op, ast.And):
                result = np.where(result != 0, value, result)
            else:
                result = np.where(result != 0, result, value)
            bound = max(bound, b)
        return result, bound

    def compare(self, node: ast.Compare) -> _Value:
        tests = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
                 ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
        left, _ = self.build(node.left)
        result: np.ndarray = np.asarray(True)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            if type(op) not in tests:
                raise _Unsupported
            right, _ = self.build(comparator)
            result = result & tests[type(op)](left, right)
            left = right
        return np.asarray(result).astype(np.int64), 1

    def ifexp(self, node: ast.IfExp) -> _Value:
        test, _ = self.build(node.test)
        (body, bb), (orelse, bo) = self.build(node.body), self.build(node.orelse)
        return np.where(test != 0, body, orelse), max(bb, bo)

    # -- calls

    def call(self, node: ast.Call) -> _Value:
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise _Unsupported
        fname = node.func.id
        args = node.args
        if len(args) == 1 and isinstance(args[0], ast.List | ast.Tuple):
            if fname == "abs" or not args[0].elts:
                raise _Unsupported  # the exact evaluator's error
            args = args[0].elts
        elif fname in ("sum", "min", "max") and len(args) == 1:
            raise _Unsupported  # a tuple-valued name: not on a grid of numbers
        parts = [self.build(arg) for arg in args]
        if fname == "abs" and len(parts) == 1:
            return np.abs(parts[0][0]), parts[0][1]
        if fname == "sum":
            bound = self._within(sum(b for _, b in parts))
            return reduce(np.add, [v for v, _ in parts]), bound
        if fname in ("min", "max"):
            pick = np.minimum if fname == "min" else np.maximum
            return reduce(pick, [v for v, _ in parts]), max(b for _, b in parts)
        raise _Unsupported
