"""Values, bounds and operator tables of the safe expression evaluator (dpverify.spec.expr).

Arithmetic is exact (`int` or `Fraction`, `/` is exact rational division) and the size
of every intermediate result is bounded by MAX_BITS.
"""

from __future__ import annotations

import ast
import keyword
import operator
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from numbers import Integral
from typing import TypeAlias

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



class ExpressionError(ValueError):
    """Raised for a refused or failing expression.

    str() is one line saying what is wrong and what is allowed.
    """

    def __init__(self, message: str) -> None:
        # Messages embed pieces of user text, which may span lines; keep one line.
        super().__init__(" ".join(str(message).split()))


# --- values ------------------------------------------------------------------


def describe(n: int) -> str:
    """Show an int, or only its size when printing it would flood a message."""
    return str(n) if n.bit_length() <= 64 else f"a {n.bit_length()}-bit number"


def bounded(value: Number | bool, where: str) -> Number:
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


def as_number(value: Value, where: str) -> Number:
    """Refuse a tuple where a single number is needed."""
    if isinstance(value, tuple):
        raise ExpressionError(f"{where} is a tuple, not a number; use sum(), min() or max() on it")
    return value


def as_integer(value: Value, where: str, op: str) -> int:
    """Operand of a bitwise operator: must be an integer."""
    number = as_number(value, where)
    if isinstance(number, Fraction):  # normalised, so certainly not integral
        raise ExpressionError(
            f"operator {op!r} needs integers, but {where} is {number}; "
            "bitwise ^ & | ~ are allowed on integer values only"
        )
    return number


def env_number(name: str, raw: object) -> Number:
    """Convert one number supplied by the caller (int, bool, Fraction)."""
    if isinstance(raw, Fraction):
        return bounded(raw, f"name {name!r}")
    if isinstance(raw, Integral):  # int, bool, numpy integers
        return bounded(int(raw), f"name {name!r}")
    raise ExpressionError(
        f"value of {name!r} has unsupported type {type(raw).__name__}; "
        "expected int, Fraction, bool or a tuple of ints"
    )


def env_value(name: str, raw: object) -> Value:
    """Convert the caller's value of a name (a number or a tuple of numbers)."""
    if isinstance(raw, tuple):
        return tuple(env_number(name, item) for item in raw)
    return env_number(name, raw)


def power(base: Number, exponent: Number, where: str) -> Number:
    """``base ** exponent``, refused before computing if the result would be huge."""
    if isinstance(exponent, Fraction):
        raise ExpressionError(
            f"the exponent in {where} is {exponent}; only integer exponents are allowed"
        )
    if abs(exponent) > MAX_EXPONENT:
        raise ExpressionError(
            f"power too large in {where}: exponent {describe(exponent)} "
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
        return bounded(Fraction(base) ** exponent, where)  # exact, unlike int ** -n
    return bounded(base**exponent, where)


def absolute(value: Number) -> Number:
    return -value if value < 0 else value


def truth(value: Value, where: str) -> bool:
    return bool(as_number(value, where))


# --- operator tables ---------------------------------------------------------

ARITHMETIC: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", lambda a, b: Fraction(a) / b),  # exact rational division (spec.md)
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}
BITWISE: dict[type[ast.operator], tuple[str, Callable[[int, int], int]]] = {
    ast.BitXor: ("^", operator.xor),
    ast.BitAnd: ("&", operator.and_),
    ast.BitOr: ("|", operator.or_),
}
OTHER_OPERATORS: dict[type[ast.operator], str] = {
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}
COMPARISONS: dict[type[ast.cmpop], Callable[[Number, Number], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
REFUSED_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

LITERAL_HINT = "a [..] or (..) literal is allowed only as the one argument of sum, min or max"

# Constructs refused outright, with the words used to name them (and an optional hint).
REFUSED: dict[type[ast.AST], tuple[str, str]] = {
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
    ast.List: ("list literal", LITERAL_HINT),
    ast.Tuple: ("tuple literal", LITERAL_HINT),
    ast.JoinedStr: ("f-string", "only numbers are allowed as constants"),
    ast.FormattedValue: ("f-string", "only numbers are allowed as constants"),
    ast.NamedExpr: ("assignment expression ':='", ""),
    ast.Starred: ("starred expression '*'", ""),
    ast.Await: ("await", ""),
    ast.Yield: ("yield", ""),
    ast.YieldFrom: ("yield from", ""),
}


def is_dunder(name: str) -> bool:
    return name.startswith("__") or name.endswith("__")


def check_names(names: Iterable[str]) -> frozenset[str]:
    """Validate the variable names an expression may use."""
    if isinstance(names, str):
        raise TypeError("names must be an iterable of names, not a single string")
    result = frozenset(names)
    for name in result:
        if (
            not isinstance(name, str)
            or not name.isidentifier()
            or keyword.iskeyword(name)
            or is_dunder(name)
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
