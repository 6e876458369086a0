"""Safe, cost-bounded evaluation of the small formulas written in problem files.

Problem files are data and must never run code.  An expression is parsed with
``ast.parse(text, mode="eval")``; every node is checked against a short allow
list and turned into a Python closure, so nothing is ever handed to ``eval``,
``exec`` or ``compile``.  Arithmetic is exact (``int`` or ``Fraction``) and the
size of every intermediate result is bounded, so a hostile formula such as
``9**9**9**9`` fails within microseconds instead of exhausting memory or time.

Example::

    >>> e = compile_expression("-(f - y)**2", ["f", "y"])
    >>> e.evaluate({"f": 3, "y": 1})
    -4
"""

from __future__ import annotations

import ast
import keyword
import operator
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from typing import TypeAlias

__all__ = ["Expression", "ExpressionError", "compile_expression"]

# --- cost bounds -------------------------------------------------------------
MAX_TEXT_LENGTH = 1000  # characters of expression text
MAX_NODES = 500  # AST nodes, counting operator and context nodes
MAX_DEPTH = 200  # nesting depth of expression nodes (keeps recursion shallow)
MAX_BITS = 4096  # bits of any int, numerator or denominator ever produced
MAX_EXPONENT = 256  # largest |exponent| accepted by **

FUNCTIONS = frozenset({"sum", "min", "max", "abs"})

Number: TypeAlias = int | Fraction
Value: TypeAlias = Number | tuple[Number, ...]
Env: TypeAlias = Mapping[str, object]
_Fn: TypeAlias = Callable[[Env], Value]

_SNIPPET_LENGTH = 40
_MAX_NAMES_SHOWN = 12


class ExpressionError(ValueError):
    """Raised for a refused or failing expression.

    str() is one line saying what is wrong and what is allowed.
    """

    def __init__(self, message: str) -> None:
        # Messages embed pieces of user text, which may span lines; keep one line.
        super().__init__(" ".join(str(message).split()))


# --- values ------------------------------------------------------------------


def _describe(n: int) -> str:
    """Show an int, or only its size when printing it would flood a message."""
    return str(n) if n.bit_length() <= 64 else f"a {n.bit_length()}-bit number"


def _bounded(value: Number | bool, where: str) -> Number:
    """Normalise a result (bool -> int, integral Fraction -> int) and enforce MAX_BITS."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if value.bit_length() > MAX_BITS:
            raise ExpressionError(f"result of {where} is too large (more than {MAX_BITS} bits)")
        return value
    if value.numerator.bit_length() > MAX_BITS or value.denominator.bit_length() > MAX_BITS:
        raise ExpressionError(
            f"result of {where} is too large (numerator or denominator above {MAX_BITS} bits)"
        )
    return value.numerator if value.denominator == 1 else value


def _as_number(value: Value, where: str) -> Number:
    """Refuse a tuple where a single number is needed."""
    if isinstance(value, tuple):
        raise ExpressionError(f"{where} is a tuple, not a number; use sum(), min() or max() on it")
    return value


def _as_integer(value: Value, where: str, op: str) -> int:
    """Operand of a bitwise operator: must be an integer."""
    number = _as_number(value, where)
    if isinstance(number, Fraction):  # normalised, so certainly not integral
        raise ExpressionError(
            f"operator {op!r} needs integers, but {where} is {number}; "
            "bitwise ^ & | ~ are allowed on integer values only"
        )
    return number


def _env_number(name: str, raw: object) -> Number:
    """Convert one number supplied by the caller (int, bool, Fraction)."""
    if isinstance(raw, Fraction):
        return _bounded(raw, f"name {name!r}")
    if isinstance(raw, Integral):  # int, bool, numpy integers
        return _bounded(int(raw), f"name {name!r}")
    raise ExpressionError(
        f"value of {name!r} has unsupported type {type(raw).__name__}; "
        "expected int, Fraction, bool or a tuple of ints"
    )


def _env_value(name: str, raw: object) -> Value:
    """Convert the caller's value of a name (a number or a tuple of numbers)."""
    if isinstance(raw, tuple):
        return tuple(_env_number(name, item) for item in raw)
    return _env_number(name, raw)


def _power(base: Number, exponent: Number, where: str) -> Number:
    """``base ** exponent``, refused before computing if the result would be huge."""
    if isinstance(exponent, Fraction):
        raise ExpressionError(
            f"the exponent in {where} is {exponent}; only integer exponents are allowed"
        )
    if abs(exponent) > MAX_EXPONENT:
        raise ExpressionError(
            f"power too large in {where}: exponent {_describe(exponent)} "
            f"exceeds {MAX_EXPONENT} in absolute value"
        )
    if isinstance(base, Fraction):
        bits = max(base.numerator.bit_length(), base.denominator.bit_length())
    else:
        bits = base.bit_length()
    if bits * abs(exponent) > MAX_BITS:
        raise ExpressionError(
            f"power too large in {where}: about {bits * abs(exponent)} bits, "
            f"at most {MAX_BITS} allowed"
        )
    if exponent < 0:
        if base == 0:
            raise ExpressionError(f"division by zero in {where} (zero to a negative power)")
        return _bounded(Fraction(base) ** exponent, where)  # exact, unlike int ** -n
    return _bounded(base**exponent, where)


def _absolute(value: Number) -> Number:
    return -value if value < 0 else value


def _truth(value: Value, where: str) -> bool:
    return bool(_as_number(value, where))


# --- operator tables ---------------------------------------------------------

_ARITHMETIC: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}
_BITWISE: dict[type[ast.operator], tuple[str, Callable[[int, int], int]]] = {
    ast.BitXor: ("^", operator.xor),
    ast.BitAnd: ("&", operator.and_),
    ast.BitOr: ("|", operator.or_),
}
_OTHER_OPERATORS: dict[type[ast.operator], str] = {
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}
_COMPARISONS: dict[type[ast.cmpop], Callable[[Number, Number], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_REFUSED_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

_LITERAL_HINT = "a [..] or (..) literal is allowed only as the one argument of sum, min or max"

# Constructs refused outright, with the words used to name them (and an optional hint).
_REFUSED: dict[type[ast.AST], tuple[str, str]] = {
    ast.Attribute: ("attribute access", ""),
    ast.Subscript: ("subscript (indexing)", "use sum(x), min(x) or max(x) for a tuple"),
    ast.Slice: ("slice", "use sum(x), min(x) or max(x) for a tuple"),
    ast.Lambda: ("lambda", ""),
    ast.ListComp: ("list comprehension", "use sum(x), min(x) or max(x)"),
    ast.SetComp: ("set comprehension", "use sum(x), min(x) or max(x)"),
    ast.DictComp: ("dict comprehension", "use sum(x), min(x) or max(x)"),
    ast.GeneratorExp: ("generator expression", "use sum(x), min(x) or max(x)"),
    ast.Dict: ("dict literal", ""),
    ast.Set: ("set literal", ""),
    ast.List: ("list literal", _LITERAL_HINT),
    ast.Tuple: ("tuple literal", _LITERAL_HINT),
    ast.JoinedStr: ("f-string", "only numbers are allowed as constants"),
    ast.FormattedValue: ("f-string", "only numbers are allowed as constants"),
    ast.NamedExpr: ("assignment expression ':='", ""),
    ast.Starred: ("starred expression '*'", ""),
    ast.Await: ("await", ""),
    ast.Yield: ("yield", ""),
    ast.YieldFrom: ("yield from", ""),
}


def _is_dunder(name: str) -> bool:
    return name.startswith("__") or name.endswith("__")


def _check_names(names: Iterable[str]) -> frozenset[str]:
    """Validate the variable names an expression may use."""
    if isinstance(names, str):
        raise TypeError("names must be an iterable of names, not a single string")
    result = frozenset(names)
    for name in result:
        if (
            not isinstance(name, str)
            or not name.isidentifier()
            or keyword.iskeyword(name)
            or _is_dunder(name)
            # The parser NFKC-normalises identifiers, so other spellings never match.
            or unicodedata.normalize("NFKC", name) != name
        ):
            raise ExpressionError(
                f"invalid variable name {name!r}; a name must be a plain identifier "
                "that is not a keyword and not a double-underscore name"
            )
        if name in FUNCTIONS:
            raise ExpressionError(
                f"invalid variable name {name!r}: it is the name of the function {name}()"
            )
    return result


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
            f"allowed: numbers, {names}, operators + - * // % ** "
            "(and ^ & | ~ on integers), comparisons < <= > >= == !=, and/or/not, "
            "'a if c else b', and calls of sum, min, max, abs"
        )

    def refuse(self, what: str, node: ast.AST, hint: str = "") -> ExpressionError:
        """Build the error for a construct that is not allowed."""
        hint = f"; {hint}" if hint else ""
        return ExpressionError(
            f"{what} is not allowed: {self.snippet(node)}{hint}; {self.allowed()}"
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
        what, hint = _REFUSED.get(type(node), (type(node).__name__, ""))
        raise self.refuse(what, node, hint)

    # -- leaves

    def constant(self, node: ast.Constant) -> _Fn:
        value = node.value
        number: Number
        if isinstance(value, bool | int):
            number = _bounded(int(value), self.snippet(node))
        elif isinstance(value, float):
            try:
                number = _bounded(Fraction(value), self.snippet(node))  # exact binary value
            except (OverflowError, ValueError):
                raise self.refuse("infinite float constant", node) from None
        else:
            kinds = {str: "string constant", bytes: "bytes constant", complex: "complex number"}
            what = kinds.get(type(value), f"constant {value!r}")
            raise self.refuse(what, node, "only numbers are allowed as constants")
        return lambda env: number

    def name(self, node: ast.Name) -> _Fn:
        ident = node.id
        if _is_dunder(ident):
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
            return _env_value(ident, raw)

        return fn

    # -- operators

    def unary(self, node: ast.UnaryOp) -> _Fn:
        operand = self.build(node.operand)
        where = self.snippet(node.operand)
        op = node.op
        if isinstance(op, ast.Not):
            return lambda env: 0 if _truth(operand(env), where) else 1
        if isinstance(op, ast.USub):
            return lambda env: _bounded(-_as_number(operand(env), where), where)
        if isinstance(op, ast.UAdd):
            return lambda env: _as_number(operand(env), where)
        # ast.Invert: Python's ~n == -n - 1 on integers.
        return lambda env: _bounded(~_as_integer(operand(env), where, "~"), where)

    def binary(self, node: ast.BinOp) -> _Fn:
        op_type = type(node.op)
        if op_type is ast.Div:
            raise self.refuse(
                "true division '/'",
                node,
                "results must be exact: use '//' (floor division) or multiply out, "
                "e.g. 2*sum(x) > k instead of sum(x) > k/2; "
                "the arithmetic operators are + - * // % **",
            )
        if op_type in _OTHER_OPERATORS:
            raise self.refuse(f"operator {_OTHER_OPERATORS[op_type]!r}", node)
        left, right = self.build(node.left), self.build(node.right)
        lw, rw, where = self.snippet(node.left), self.snippet(node.right), self.snippet(node)

        if op_type is ast.Pow:
            return lambda env: _power(_as_number(left(env), lw), _as_number(right(env), rw), where)

        if op_type in _BITWISE:
            symbol, bit_fn = _BITWISE[op_type]
            # Bitwise results never exceed their operands' size, so no bound check.
            return lambda env: bit_fn(
                _as_integer(left(env), lw, symbol), _as_integer(right(env), rw, symbol)
            )

        _, arith_fn = _ARITHMETIC[op_type]

        def fn(env: Env) -> Value:
            a = _as_number(left(env), lw)
            b = _as_number(right(env), rw)
            try:
                result = arith_fn(a, b)
            except ZeroDivisionError:
                raise ExpressionError(f"division by zero in {where}") from None
            return _bounded(result, where)

        return fn

    def boolean(self, node: ast.BoolOp) -> _Fn:
        """``and``/``or`` with Python's semantics: the deciding operand is the result."""
        parts = [(self.build(value), self.snippet(value)) for value in node.values]
        stop_when = isinstance(node.op, ast.Or)  # `or` stops at a true operand

        def fn(env: Env) -> Value:
            result: Number = 0
            for part, where in parts:
                result = _as_number(part(env), where)
                if bool(result) == stop_when:
                    break
            return result

        return fn

    def compare(self, node: ast.Compare) -> _Fn:
        """Comparison chains, short-circuiting like Python; result is 1 or 0."""
        for op in node.ops:
            if type(op) in _REFUSED_COMPARISONS:
                raise self.refuse(
                    f"comparison {_REFUSED_COMPARISONS[type(op)]!r}", node, "use == or !="
                )
        first, first_where = self.build(node.left), self.snippet(node.left)
        rest = [
            (_COMPARISONS[type(op)], self.build(comp), self.snippet(comp))
            for op, comp in zip(node.ops, node.comparators, strict=True)
        ]

        def fn(env: Env) -> Value:
            a = _as_number(first(env), first_where)
            for test, comp, where in rest:
                b = _as_number(comp(env), where)
                if not test(a, b):
                    return 0
                a = b
            return 1

        return fn

    def conditional(self, node: ast.IfExp) -> _Fn:
        test, body, orelse = self.build(node.test), self.build(node.body), self.build(node.orelse)
        where = self.snippet(node.test)
        return lambda env: body(env) if _truth(test(env), where) else orelse(env)

    # -- calls

    def call(self, node: ast.Call) -> _Fn:
        func = node.func
        if not isinstance(func, ast.Name):
            self.build(func)  # names the refused construct (attribute, lambda, ...) if any
            raise self.refuse("calling the result of an expression", node)
        fname = func.id
        if _is_dunder(fname):
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

        args = [self.argument(arg, literal_ok=(count == 1 and fname != "abs")) for arg in node.args]
        wheres = [self.snippet(arg) for arg in node.args]
        where = self.snippet(node)

        if fname == "abs":
            (arg_fn,), (arg_where,) = args, wheres
            return lambda env: _absolute(_as_number(arg_fn(env), arg_where))

        if fname == "sum":
            (arg_fn,), (arg_where,) = args, wheres

            def total(env: Env) -> Value:
                value = arg_fn(env)
                if not isinstance(value, tuple):
                    raise ExpressionError(
                        f"sum() needs a tuple such as x or [a, b], but {arg_where} is a number"
                    )
                return _bounded(sum(value), where)

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
            return pick(_as_number(a(env), w) for a, w in zip(args, wheres, strict=True))

        return extreme

    def argument(self, node: ast.expr, literal_ok: bool) -> _Fn:
        """An argument; a [..] or (..) literal is allowed as the only argument of sum/min/max."""
        if not (literal_ok and isinstance(node, ast.List | ast.Tuple)):
            return self.build(node)
        items = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                raise self.refuse("starred item '*'", elt)
            items.append((self.build(elt), self.snippet(elt)))
        return lambda env: tuple(_as_number(item(env), w) for item, w in items)


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
        names = _check_names(self.names)
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
    return Expression(text, _check_names(names))
