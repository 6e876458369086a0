"""Safe, cost-bounded evaluation of the small formulas written in problem files.

Problem files are data and must never run code.  An expression is parsed with
``ast.parse(text, mode="eval")``; every node is checked against a short allow
list and turned into a Python closure, so nothing is ever handed to ``eval``,
``exec`` or ``compile``.  Arithmetic is exact (``int`` or ``Fraction``; ``/`` is
exact rational division) and the size of every intermediate result is bounded, so
a hostile formula such as ``9**9**9**9`` fails within microseconds instead of
exhausting memory or time.

Example::

    >>> e = compile_expression("-(f - y)**2", ["f", "y"])
    >>> e.evaluate({"f": 3, "y": 1})
    -4
    >>> compile_expression("sum(x) / k", ["x", "k"]).evaluate({"x": (1, 1, 0), "k": 3})
    Fraction(2, 3)
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeAlias

from dpverify.spec.expr_values import (
    ARITHMETIC,
    BITWISE,
    COMPARISONS,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_NODES,
    MAX_TEXT_LENGTH,
    OTHER_OPERATORS,
    REFUSED,
    REFUSED_COMPARISONS,
    Env,
    ExpressionError,
    Number,
    Value,
    absolute,
    as_integer,
    as_number,
    bounded,
    check_names,
    env_value,
    is_dunder,
    power,
    truth,
)

__all__ = ["Expression", "ExpressionError", "compile_expression"]

_Fn: TypeAlias = Callable[[Env], Value]
_SNIPPET_LENGTH = 40
_MAX_NAMES_SHOWN = 12


# --- compiler: AST -> closures -----------------------------------------------


class _Compiler:
    """Checks an expression's syntax tree and turns it into nested closures.

    Each closure takes the environment and returns a normalised value; every
    closure calls only its children, so evaluation recursion is as deep as the
    (bounded) expression.
    """

    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.raw = text  # as written; checked for type and length by parse()
        self.text = ""  # the parsed source, without surrounding whitespace
        self.names = names

    # -- messages

    def snippet(self, node: ast.AST) -> str:
        """The source text of `node`, shortened and quoted, for messages."""
        segment = ast.get_source_segment(self.text, node) or type(node).__name__
        segment = " ".join(segment.split())
        if len(segment) > _SNIPPET_LENGTH:
            segment = segment[: _SNIPPET_LENGTH - 3] + "..."
        return repr(segment)

    def allowed(self) -> str:
        """One-line summary of what an expression may contain."""
        shown = sorted(self.names)[:_MAX_NAMES_SHOWN]
        if not shown:
            names = "no variable names"
        else:
            more = ", ..." if len(self.names) > len(shown) else ""
            names = "the names " + ", ".join(shown) + more
        return (
            f"allowed: numbers, {names}, + - * / // % ** ^ & | ~, comparisons, "
            "and/or/not, a if c else b, sum() min() max() abs()"
        )

    def refuse(self, what: str, node: ast.AST, hint: str = "") -> ExpressionError:
        """Build the error for a construct that is not allowed: one line, with the hint
        when there is one (it says what to write instead), else the allowed list."""
        return ExpressionError(
            f"{what} is not allowed: {self.snippet(node)}; {hint or self.allowed()}"
        )

    # -- entry point

    def compile(self) -> _Fn:
        tree = self.parse()
        return self.build(tree.body)

    def parse(self) -> ast.Expression:
        """Parse with size, node-count and depth limits; syntax errors become ExpressionError."""
        if not isinstance(self.raw, str):
            raise ExpressionError(f"an expression must be a string, not {type(self.raw).__name__}")
        if len(self.raw) > MAX_TEXT_LENGTH:
            raise ExpressionError(
                f"expression too long ({len(self.raw)} characters; "
                f"at most {MAX_TEXT_LENGTH} allowed)"
            )
        # Like eval(), ignore surrounding whitespace (ast.parse rejects a leading indent).
        self.text = self.raw.strip()
        if not self.text:
            raise ExpressionError("empty expression; write a number or a formula like 'x1 + x2'")
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            where = f" at column {exc.offset}" if exc.offset else ""
            raise ExpressionError(f"syntax error{where}: {exc.msg}") from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ExpressionError(f"cannot parse expression: {exc}") from None
        # Iterative walk: count every node and measure expression nesting depth.
        count = 0
        deepest = 0
        stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
        while stack:
            node, depth = stack.pop()
            count += 1
            deepest = max(deepest, depth)
            step = 1 if isinstance(node, ast.expr) else 0
            stack.extend((child, depth + step) for child in ast.iter_child_nodes(node))
        if count > MAX_NODES:
            raise ExpressionError(
                f"expression too complex ({count} syntax nodes; at most {MAX_NODES} allowed)"
            )
        if deepest > MAX_DEPTH:
            raise ExpressionError(
                f"expression nested too deeply ({deepest} levels; at most {MAX_DEPTH} allowed)"
            )
        return tree

    # -- dispatch

    def build(self, node: ast.expr) -> _Fn:
        """Return the closure computing `node`, or raise ExpressionError."""
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.BoolOp):
            return self.boolean(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return self.conditional(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        what, hint = REFUSED.get(type(node), (type(node).__name__, ""))
        raise self.refuse(what, node, hint)

    # -- leaves

    def constant(self, node: ast.Constant) -> _Fn:
        value = node.value
        number: Number
        if isinstance(value, bool | int):
            number = bounded(int(value), self.snippet(node))
        elif isinstance(value, float):
            try:
                number = bounded(Fraction(value), self.snippet(node))  # exact binary value
            except (OverflowError, ValueError):
                raise self.refuse("infinite float constant", node) from None
        else:
            kinds = {str: "string constant", bytes: "bytes constant", complex: "complex number"}
            what = kinds.get(type(value), f"constant {value!r}")
            raise self.refuse(what, node, "only numbers are allowed as constants")
        return lambda env: number

    def name(self, node: ast.Name) -> _Fn:
        ident = node.id
        if is_dunder(ident):
            raise self.refuse("double-underscore name", node)
        if ident in FUNCTIONS:
            raise self.refuse(
                f"function name {ident!r} without a call", node, f"call it, e.g. {ident}(x)"
            )
        if ident not in self.names:
            allowed = ", ".join(sorted(self.names)) or "none"
            raise ExpressionError(f"unknown name {ident!r}; allowed names: {allowed}")

        def fn(env: Env) -> Value:
            try:
                raw = env[ident]
            except KeyError:
                raise ExpressionError(f"no value given for name {ident!r}") from None
            return env_value(ident, raw)

        return fn

    # -- operators

    def unary(self, node: ast.UnaryOp) -> _Fn:
        operand = self.build(node.operand)
        where = self.snippet(node.operand)
        op = node.op
        if isinstance(op, ast.Not):
            return lambda env: 0 if truth(operand(env), where) else 1
        if isinstance(op, ast.USub):
            return lambda env: bounded(-as_number(operand(env), where), where)
        if isinstance(op, ast.UAdd):
            return lambda env: as_number(operand(env), where)
        # ast.Invert: Python's ~n == -n - 1 on integers.
        return lambda env: bounded(~as_integer(operand(env), where, "~"), where)

    def binary(self, node: ast.BinOp) -> _Fn:
        op_type = type(node.op)
        if op_type in OTHER_OPERATORS:
            raise self.refuse(f"operator {OTHER_OPERATORS[op_type]!r}", node)
        left, right = self.build(node.left), self.build(node.right)
        lw, rw, where = self.snippet(node.left), self.snippet(node.right), self.snippet(node)

        if op_type is ast.Pow:
            return lambda env: power(as_number(left(env), lw), as_number(right(env), rw), where)

        if op_type in BITWISE:
            symbol, bit_fn = BITWISE[op_type]
            # Bitwise results never exceed their operands' size, so no bound check.
            return lambda env: bit_fn(
                as_integer(left(env), lw, symbol), as_integer(right(env), rw, symbol)
            )

        _, arith_fn = ARITHMETIC[op_type]

        def fn(env: Env) -> Value:
            a = as_number(left(env), lw)
            b = as_number(right(env), rw)
            try:
                result = arith_fn(a, b)
            except ZeroDivisionError:
                raise ExpressionError(f"division by zero in {where}") from None
            return bounded(result, where)

        return fn

    def boolean(self, node: ast.BoolOp) -> _Fn:
        """``and``/``or`` with Python's semantics: the deciding operand is the result."""
        parts = [(self.build(value), self.snippet(value)) for value in node.values]
        stop_when = isinstance(node.op, ast.Or)  # `or` stops at a true operand

        def fn(env: Env) -> Value:
            result: Number = 0
            for part, where in parts:
                result = as_number(part(env), where)
                if bool(result) == stop_when:
                    break
            return result

        return fn

    def compare(self, node: ast.Compare) -> _Fn:
        """Comparison chains, short-circuiting like Python; result is 1 or 0."""
        for op in node.ops:
            if type(op) in REFUSED_COMPARISONS:
                raise self.refuse(
                    f"comparison {REFUSED_COMPARISONS[type(op)]!r}", node, "use == or !="
                )
        first, first_where = self.build(node.left), self.snippet(node.left)
        rest = [
            (COMPARISONS[type(op)], self.build(comp), self.snippet(comp))
            for op, comp in zip(node.ops, node.comparators, strict=True)
        ]

        def fn(env: Env) -> Value:
            a = as_number(first(env), first_where)
            for test, comp, where in rest:
                b = as_number(comp(env), where)
                if not test(a, b):
                    return 0
                a = b
            return 1

        return fn

    def conditional(self, node: ast.IfExp) -> _Fn:
        test, body, orelse = self.build(node.test), self.build(node.body), self.build(node.orelse)
        where = self.snippet(node.test)
        return lambda env: body(env) if truth(test(env), where) else orelse(env)

    # -- calls

    def call(self, node: ast.Call) -> _Fn:
        fname = self.check_call(node)
        count = len(node.args)
        args = [self.argument(arg, literal_ok=(count == 1 and fname != "abs")) for arg in node.args]
        wheres = [self.snippet(arg) for arg in node.args]
        where = self.snippet(node)

        if fname == "abs":
            (arg_fn,), (arg_where,) = args, wheres
            return lambda env: absolute(as_number(arg_fn(env), arg_where))

        if fname == "sum":
            (arg_fn,), (arg_where,) = args, wheres

            def total(env: Env) -> Value:
                value = arg_fn(env)
                if not isinstance(value, tuple):
                    raise ExpressionError(
                        f"sum() needs a tuple such as x or [a, b], but {arg_where} is a number"
                    )
                return bounded(sum(value), where)

            return total

        pick: Callable[[Iterable[Number]], Number] = min if fname == "min" else max

        def extreme(env: Env) -> Value:
            if len(args) == 1:
                value = args[0](env)
                if not isinstance(value, tuple):
                    raise ExpressionError(
                        f"{fname}() of one argument needs a tuple, but {wheres[0]} is a number; "
                        f"give a tuple or several numbers"
                    )
                if not value:
                    raise ExpressionError(f"{fname}() of an empty tuple in {where}")
                return pick(value)
            return pick(as_number(a(env), w) for a, w in zip(args, wheres, strict=True))

        return extreme

    def check_call(self, node: ast.Call) -> str:
        """The name of an allowed call (sum, min, max, abs with positional arguments), or
        the error that says what is wrong with it."""
        func = node.func
        if not isinstance(func, ast.Name):
            self.build(func)  # names the refused construct (attribute, lambda, ...) if any
            raise self.refuse("calling the result of an expression", node)
        fname = func.id
        if is_dunder(fname):
            raise self.refuse("double-underscore name", func)
        if fname not in FUNCTIONS:
            raise self.refuse(
                f"call of {fname!r}", node, "only sum, min, max and abs may be called"
            )
        if node.keywords:
            arg_name = node.keywords[0].arg
            what = "keyword argument **" if arg_name is None else f"keyword argument '{arg_name}='"
            raise self.refuse(what, node, "functions take positional arguments only")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.refuse("starred argument '*'", arg)
        count = len(node.args)
        if fname in ("sum", "abs") and count != 1:
            what = "a tuple such as x or [a, b]" if fname == "sum" else "a number"
            raise self.refuse(
                f"{fname}() with {count} arguments",
                node,
                f"{fname}() takes exactly one argument, {what}",
            )
        if count == 0:
            raise self.refuse(f"{fname}() without arguments", node)
        return fname

    def argument(self, node: ast.expr, literal_ok: bool) -> _Fn:
        """An argument; a [..] or (..) literal is allowed as the only argument of sum/min/max."""
        if not (literal_ok and isinstance(node, ast.List | ast.Tuple)):
            return self.build(node)
        items = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                raise self.refuse("starred item '*'", elt)
            items.append((self.build(elt), self.snippet(elt)))
        return lambda env: tuple(as_number(item(env), w) for item, w in items)


# --- public API --------------------------------------------------------------


@dataclass(frozen=True)
class Expression:
    """A validated expression over `names`; evaluate it as often as needed.

    Constructing it checks the text (ExpressionError if refused); equality and
    hashing use only `text` and `names`; it pickles by recompiling.
    """

    text: str
    names: frozenset[str]  # the names the expression may use
    _fn: _Fn = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = check_names(self.names)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "_fn", _Compiler(self.text, names).compile())

    def __reduce__(self) -> tuple[type[Expression], tuple[str, frozenset[str]]]:
        # The compiled closures cannot be pickled; rebuild them from the text.
        return (Expression, (self.text, self.names))

    def evaluate(self, env: Mapping[str, object]) -> int | Fraction:
        """Evaluate with `env` giving each used name an int, Fraction, bool or tuple of ints.

        Returns an int, or a Fraction when the result is not an integer.
        Raises ExpressionError on a missing or bad value, division by zero, or a
        result beyond the size bounds.
        """
        try:
            value = self._fn(env)
        except RecursionError:
            raise ExpressionError("expression is nested too deeply to evaluate") from None
        if isinstance(value, tuple):
            raise ExpressionError(
                "the expression gives a tuple, not a number; use sum(x), min(x) or max(x)"
            )
        return value


def compile_expression(text: str, names: Iterable[str]) -> Expression:
    """Parse and validate `text`; raise ExpressionError if it uses anything not allowed."""
    return Expression(text, check_names(names))
