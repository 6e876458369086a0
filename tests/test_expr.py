"""Tests for dpverify.spec.expr, the safe cost-bounded expression evaluator."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import dataclasses
import importlib
import itertools
import os
import pickle
import subprocess
import time
import warnings
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dpverify.spec import expr as expr_module
from dpverify.spec.expr import Expression, ExpressionError, compile_expression

# Names used by the problem files: inputs x1..x3 and their tuple x, a threshold k,
# gains over an output f and a truth y, count losses over an index i and release r.
NAMES = ("x", "x1", "x2", "x3", "k", "f", "y", "i", "r", "a")

FAST = 0.25  # seconds; a refused huge power must fail far faster than this


def ev(text: str, names: Iterable[str] | None = None, /, **env: object) -> int | Fraction:
    """Compile `text` over `names` (default: the env's keys) and evaluate it."""
    return compile_expression(text, env.keys() if names is None else names).evaluate(env)


def refusal(text: str, names: Iterable[str] = NAMES) -> str:
    """The message of the ExpressionError raised when compiling `text`."""
    with pytest.raises(ExpressionError) as info:
        compile_expression(text, names)
    message = str(info.value)
    assert "\n" not in message
    return message


def failure(text: str, names: Iterable[str] = NAMES, **env: object) -> str:
    """Compile `text` (must succeed), evaluate it, return the ExpressionError message."""
    expression = compile_expression(text, names)
    with pytest.raises(ExpressionError) as info:
        expression.evaluate(env)
    message = str(info.value)
    assert "\n" not in message
    return message


BITS3 = list(itertools.product((0, 1), repeat=3))

# --- typical product expressions --------------------------------------------


@pytest.mark.parametrize(
    ("text", "truth"),
    [
        ("x1 and not x2 or x3", lambda b1, b2, b3: (b1 and not b2) or b3),
        ("(x1 + x2 + x3) % 2", lambda b1, b2, b3: (b1 + b2 + b3) % 2),
        ("x1 ^ x2 ^ x3", lambda b1, b2, b3: b1 ^ b2 ^ b3),
        ("sum(x) >= 2", lambda b1, b2, b3: b1 + b2 + b3 >= 2),
        ("1 if 2*sum(x) > k else 0", lambda b1, b2, b3: 2 * (b1 + b2 + b3) > 3),
        ("max(x) - min(x)", lambda b1, b2, b3: max(b1, b2, b3) - min(b1, b2, b3)),
        ("x1 == x2 != x3", lambda b1, b2, b3: b1 == b2 != b3),
    ],
)
def test_boolean_functions_over_truth_table(
    text: str, truth: Callable[[int, int, int], object]
) -> None:
    expression = compile_expression(text, NAMES)
    for b1, b2, b3 in BITS3:
        got = expression.evaluate({"x": (b1, b2, b3), "x1": b1, "x2": b2, "x3": b3, "k": 3})
        assert type(got) is int, (text, got)  # booleans are normalised to 0/1
        assert got == int(bool(truth(b1, b2, b3))), (text, b1, b2, b3)


def test_gains_over_f_and_y() -> None:
    squared = compile_expression("-(f - y)**2", ["f", "y"])
    absolute = compile_expression("-abs(f-y)", ["f", "y"])
    exact = compile_expression("1 if f == y else 0", ["f", "y"])
    for f, y in itertools.product(range(-3, 4), repeat=2):
        env = {"f": f, "y": y}
        assert squared.evaluate(env) == -((f - y) ** 2)
        assert absolute.evaluate(env) == -abs(f - y)
        assert exact.evaluate(env) == (1 if f == y else 0)
    assert squared.evaluate({"f": Fraction(1, 2), "y": 0}) == Fraction(-1, 4)


def test_count_losses_over_i_and_r() -> None:
    squared = compile_expression("abs(i - r)**2", ["i", "r"])
    capped = compile_expression("min(abs(i-r), 3)", ["i", "r"])
    for i, r in itertools.product(range(6), repeat=2):
        assert squared.evaluate({"i": i, "r": r}) == (i - r) ** 2
        assert capped.evaluate({"i": i, "r": r}) == min(abs(i - r), 3)


def test_division_is_exact_rational_division() -> None:
    """spec.md: `/` is exact division, so `sum(x) / k` is the mean and `k/2` a threshold."""
    assert ev("sum(x) / k", x=(1, 1, 0), k=3) == Fraction(2, 3)
    assert ev("1 if sum(x) > k/ 2 else 0", x=(1, 1, 0), k=3) == 1
    assert ev("1 if sum(x) > k/ 2 else 0", x=(1, 0, 0), k=3) == 0  # negative control
    assert ev("4 / 2") == 2 and type(ev("4 / 2")) is int  # integral results are ints
    assert compile_expression("abs(i - r) / n", ["i", "r", "n"]).evaluate(
        {"i": 1, "r": 4, "n": 6}) == Fraction(1, 2)


def test_division_by_zero_is_one_short_line() -> None:
    expression = compile_expression("1 / (x1 - 1)", ["x1"])
    with pytest.raises(ExpressionError) as info:
        expression.evaluate({"x1": 1})
    assert str(info.value) == "division by zero in '1 / (x1 - 1)'"


# --- exact numbers ------------------------------------------------------------


def test_float_constants_are_exact_fractions() -> None:
    assert ev("0.1") == Fraction(0.1)
    assert ev("0.1") != Fraction(1, 10)  # the binary value, not the decimal one
    assert ev("0.1 + 0.2") == Fraction(0.1) + Fraction(0.2)
    assert ev("1e-3 * x1", x1=1000) == Fraction(1e-3) * 1000
    half = ev("0.5 * 2")
    assert half == 1 and type(half) is int


def test_results_are_int_or_non_integral_fraction() -> None:
    assert type(ev("a * 2", a=Fraction(1, 2))) is int
    assert type(ev("a", a=Fraction(6, 3))) is int
    assert ev("a + 1", a=Fraction(1, 3)) == Fraction(4, 3)
    assert type(ev("True + True")) is int and ev("True + True") == 2
    assert type(ev("x1 < x2", x1=0, x2=1)) is int
    assert type(ev("not x1", x1=True)) is int
    assert type(ev("x1", x1=True)) is int
    assert (
        ev("2 and 3") == 3
        and ev("0 or 0") == 0
        and ev("0 or a", a=Fraction(1, 3)) == Fraction(1, 3)
    )
    assert ev("7 // a", a=Fraction(3, 2)) == 4 and ev("7 % a", a=Fraction(3, 2)) == 1


def test_powers_and_negative_exponents() -> None:
    assert ev("2**-1") == Fraction(1, 2)
    assert ev("(-2)**-3") == Fraction(-1, 8)
    assert ev("a**-2", a=Fraction(2, 3)) == Fraction(9, 4)
    assert ev("2**256") == 2**256
    assert ev("0**0") == 1
    assert "integer exponent" in failure("2**0.5")
    assert "integer exponent" in failure("4**a", ["a"], a=Fraction(1, 2))


def test_bitwise_requires_integers() -> None:
    assert ev("~5") == -6 and ev("~x1", x1=0) == -1
    assert ev("x1 & x2 | x3", x1=6, x2=3, x3=8) == (6 & 3) | 8
    assert ev("a ^ 1", a=Fraction(4, 2)) == 3  # integral Fraction is fine
    assert "integers" in failure("a ^ 1", ["a"], a=Fraction(1, 2))
    assert "integers" in failure("~a", ["a"], a=Fraction(1, 2))
    assert "integers" in failure("0.5 | 1")


@pytest.mark.parametrize("text", ["x1 // 0", "x1 % 0", "0**-1", "a % 0", "a // (x1 - x1)"])
def test_division_by_zero(text: str) -> None:
    assert "division by zero" in failure(text, ["x1", "a"], x1=3, a=Fraction(1, 2))


def test_short_circuits_like_python() -> None:
    assert ev("0 > 1 > 1 // 0") == 0
    assert ev("0 and 1 // 0") == 0
    assert ev("1 or 1 // 0") == 1
    assert ev("1 if 1 else 1 // 0") == 1
    assert ev("1 // 0 if 0 else 2") == 2
    for v in range(5):
        assert ev("1 < v <= 3", v=v) == int(1 < v <= 3)


def test_sum_min_max_abs() -> None:
    env = {"x": (3, 1, 2), "x1": 5, "x2": -7}
    assert ev("sum(x)", **env) == 6
    assert ev("min(x) + max(x)", **env) == 4
    assert ev("min(3, x1, 2)", **env) == 2
    assert ev("max([x1, x2, 1])", **env) == 5
    assert ev("sum((x1, x2, 0.5))", **env) == Fraction(-3, 2)
    assert ev("sum(())", **env) == 0
    assert ev("abs(x2)", **env) == 7
    assert ev("sum(x)", x=()) == 0
    assert "empty" in failure("min(x)", ["x"], x=())
    assert "tuple" in failure("max(x1)", ["x1"], x1=3)
    assert "tuple" in failure("sum(x1)", ["x1"], x1=3)
    assert "tuple" in failure("abs(x)", ["x"], x=(1,))
    assert "tuple" in failure("x + 1", ["x"], x=(1,))
    assert "tuple" in failure("x", ["x"], x=(1,))
    assert "exactly one argument" in refusal("sum(x1, x2)")
    assert "exactly one argument" in refusal("abs(x1, x2)")
    assert "without arguments" in refusal("max()")


# --- refusals -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("__import__('os')", ["__import__", "double-underscore"]),
        ("x1.real", ["attribute access", "x1.real"]),
        ("().__class__", ["attribute access"]),
        ("__builtins__", ["__builtins__", "double-underscore"]),
        ("lambda: 1", ["lambda"]),
        ("[a for a in x]", ["list comprehension"]),
        ("sum(a for a in x)", ["generator expression"]),
        ("{a for a in x}", ["set comprehension"]),
        ("x[0]", ["subscript"]),
        ("x[0:2]", ["subscript"]),
        ("open('f')", ["'open'", "only sum, min, max and abs"]),
        ("print(1)", ["'print'"]),
        ("eval('1')", ["'eval'"]),
        ("getattr(x, 'real')", ["'getattr'"]),
        ("sum(x, start=1)", ["keyword argument", "start"]),
        ("max(*x)", ["starred"]),
        ("'abc'", ["string constant"]),
        ("b'abc'", ["bytes constant"]),
        ("f'{x1}'", ["f-string"]),
        ("(y := 1)", ["':='"]),
        ("{1: 2}", ["dict literal"]),
        ("{1, 2}", ["set literal"]),
        ("(yield 1)", ["yield"]),
        ("await x1", ["await"]),
        ("1 << 3", ["'<<'"]),
        ("x1 is 1", ["'is'"]),
        ("x1 in x", ["'in'"]),
        ("1j", ["complex"]),
        ("None", ["None"]),
        ("(1, 2)", ["tuple literal"]),
        ("max([1, 2], 3)", ["list literal"]),
        ("x1(1)", ["'x1'"]),
        ("sum(x)(1)", ["calling the result"]),
        ("sum", ["without a call"]),
        ("1e999", ["infinite"]),
    ],
)
def test_refused_constructs_are_named(text: str, fragments: list[str]) -> None:
    message = refusal(text)
    for fragment in fragments:
        assert fragment in message, message
    # one short line: the hint when there is one, else the allowed list
    assert "\n" not in message and len(message) < 220, message
    assert "allowed" in message


def test_unknown_name_lists_allowed_names() -> None:
    message = refusal("z + x1", ["x1", "x2"])
    assert "'z'" in message and "x1, x2" in message


@pytest.mark.parametrize("text", ["1 +", "x1 x2", "(1", "1 = 2", "if", "1\x00"])
def test_syntax_errors_become_expression_errors(text: str) -> None:
    assert "syntax error" in refusal(text)


def test_bad_inputs() -> None:
    assert "empty" in refusal("   ")
    assert "string" in refusal(42)  # type: ignore[arg-type]
    assert issubclass(ExpressionError, ValueError)


def test_surrounding_whitespace_is_ignored() -> None:
    assert ev("  x1 + 1\n", x1=1) == 2
    assert ev("(x1 +\n 1)", x1=1) == 2


# --- cost bounds --------------------------------------------------------------


def test_text_length_limit() -> None:
    assert ev("1" * 1000) == int("1" * 1000)
    assert "too long" in refusal("1+" * 500 + "1")
    assert "too long" in refusal(" " * 1000 + "1")  # the limit applies to the text as written


def test_node_and_depth_limits() -> None:
    long_sum = "+".join(["x1"] * 120)  # 478 nodes, 120 levels
    assert ev(long_sum, x1=1) == 120
    assert "too complex" in refusal("+".join(["x1"] * 130))
    assert ev("-" * 199 + "1") == -1
    assert "nested too deeply" in refusal("-" * 201 + "1")
    assert ev("(" * 150 + "1" + ")" * 150) == 1
    refusal("(" * 1000)  # the parser's own nesting limit, reported as ExpressionError


@pytest.mark.parametrize(
    "text",
    [
        "9**9**9**9",
        "2**10**10",
        "10**10**10**10",
        "2**257",
        "(2**256)**256",
        "2**256**256",
        "(9**9)**(9**9)",
        "(2**100)**41",
        "(-3)**-300",
        "0.1**256",
        "((2**200)**20) * 2**100",
        "((2**200)**20) * ((2**200)**20)",
        "max(2**256, 3)**256",
    ],
)
def test_huge_results_are_refused_quickly(text: str) -> None:
    start = time.perf_counter()
    message = failure(text)
    elapsed = time.perf_counter() - start
    assert "too large" in message
    assert elapsed < FAST, f"{text}: {elapsed:.3f}s"


def test_power_bound_boundaries() -> None:
    assert ev("(2**100)**40") == 2**4000  # estimate: 101 bits * 40 = 4040 <= 4096
    assert "power too large" in failure("(2**100)**41")
    big = ev("(2**200)**20 + (2**200)**20")
    assert big == 2**4001
    assert ev("(2**-200)**20") == Fraction(1, 2**4000)
    assert "too large" in failure("x1 + 1", ["x1"], x1=2**5000)


@settings(max_examples=examples(200), deadline=None)
@given(base=st.integers(-(2**20), 2**20), exponent=st.integers(-300, 300))
def test_power_rule_matches_bound(base: int, exponent: int) -> None:
    expression = compile_expression("b ** e", ["b", "e"])
    too_big = abs(exponent) > 256 or base.bit_length() * abs(exponent) > 4096
    if too_big:
        assert "power too large" in failure("b ** e", ["b", "e"], b=base, e=exponent)
    elif base == 0 and exponent < 0:
        assert "division by zero" in failure("b ** e", ["b", "e"], b=base, e=exponent)
    else:
        expected = Fraction(base) ** exponent
        got = expression.evaluate({"b": base, "e": exponent})
        assert got == expected
        assert type(got) is (int if expected.denominator == 1 else Fraction)


# --- environment values ----------------------------------------------------------


def test_environment_values() -> None:
    assert "no value given for name 'x2'" in failure("x1 + x2", ["x1", "x2"], x1=1)
    assert "unsupported type float" in failure("x1", ["x1"], x1=0.5)
    assert "unsupported type str" in failure("x1", ["x1"], x1="1")
    assert "unsupported type str" in failure("sum(x)", ["x"], x=(1, "2"))
    assert ev("x1 + 1", ["x1"], x1=2, unused="ignored") == 3


def test_numpy_integers_are_accepted() -> None:
    numpy = pytest.importorskip("numpy")
    got = ev("x1 + sum(x)", x1=numpy.int64(2), x=(numpy.int8(1), 2))
    assert got == 5 and type(got) is int


@pytest.mark.parametrize("bad", ["1x", "__x", "if", "sum", "x-1", "True"])
def test_invalid_variable_names(bad: str) -> None:
    with pytest.raises(ExpressionError, match="variable name"):
        compile_expression("1", ["x1", bad])


def test_names_must_not_be_a_single_string() -> None:
    with pytest.raises(TypeError):
        compile_expression("x", "x")


# --- the Expression object ------------------------------------------------------


def test_expression_object() -> None:
    expression = compile_expression("x1 + 1", ["x2", "x1"])
    assert expression.text == "x1 + 1"
    assert expression.names == frozenset({"x1", "x2"})
    assert isinstance(expression, Expression)
    assert expression == Expression("x1 + 1", frozenset({"x1", "x2"}))
    assert hash(expression) == hash(compile_expression("x1 + 1", {"x1", "x2"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        expression.text = "x1 + 2"  # type: ignore[misc]
    with pytest.raises(ExpressionError):
        Expression("x1.real", frozenset({"x1"}))  # direct construction validates too
    for clone in (pickle.loads(pickle.dumps(expression)), copy.deepcopy(expression)):
        assert clone == expression
        assert clone.evaluate({"x1": 41}) == 42


# --- no side effects ----------------------------------------------------------

VALID_BATCH = {
    "x1 and not x2 or x3": 1,
    "sum(x) >= 2": 1,
    "-(f - y)**2": -4,
    "min(abs(i-r), 3)": 3,
    "0.5 + x1": Fraction(3, 2),
    "2**-1": Fraction(1, 2),
    "max(x)": 1,
}
MALICIOUS_BATCH = [
    "__import__('os').system('echo pwned')",
    "open('/etc/passwd').read()",
    "().__class__.__bases__[0].__subclasses__()",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "(lambda: __import__('subprocess'))()",
    "eval('1')",
    "exec('import os')",
    "compile('1', 'f', 'eval')",
    "getattr(x1, 'real')",
    "globals()",
    "breakpoint()",
    "importlib.import_module('os')",
    "sum(x, start=__import__('os'))",
    "x1.__class__",
    "9**9**9**9",
    "x1 // 0",
]
ENV = {"x": (1, 0, 1), "x1": 1, "x2": 0, "x3": 1, "k": 3, "f": 1, "y": 3, "i": 0, "r": 4}


class _Forbidden(Exception):
    """Raised by the sentinels so that a forbidden call cannot proceed."""


def _sentinels(mp: pytest.MonkeyPatch, calls: list[str]) -> None:
    """Replace file, process and import entry points by recording sentinels."""

    def sentinel(label: str) -> Callable[..., object]:
        def record(*args: object, **kwargs: object) -> object:
            calls.append(label)
            raise _Forbidden(label)

        return record

    mp.setattr(builtins, "open", sentinel("open"))
    mp.setattr(builtins, "eval", sentinel("eval"))
    mp.setattr(builtins, "exec", sentinel("exec"))
    mp.setattr(os, "system", sentinel("os.system"))
    mp.setattr(os, "popen", sentinel("os.popen"))
    mp.setattr(subprocess, "Popen", sentinel("subprocess.Popen"))
    mp.setattr(importlib, "import_module", sentinel("importlib.import_module"))
    # Last: MonkeyPatch.setattr itself runs an import statement.
    mp.setattr(builtins, "__import__", sentinel("__import__"))


def test_sentinels_detect_calls() -> None:
    calls: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        _sentinels(mp, calls)
        # Look the entry points up at call time, as any caller would.
        for module, attr, arg in [
            (builtins, "open", "f"),
            (os, "system", "true"),
            (builtins, "__import__", "os"),
        ]:
            with contextlib.suppress(_Forbidden):
                getattr(module, attr)(arg)
    assert calls == ["open", "os.system", "__import__"]
    assert builtins.open is not None and callable(os.system)


def test_compilation_and_evaluation_touch_no_file_or_process() -> None:
    calls: list[str] = []
    results: dict[str, object] = {}
    with pytest.MonkeyPatch.context() as mp:
        _sentinels(mp, calls)  # patched only around compile and evaluate
        for text in [*VALID_BATCH, *MALICIOUS_BATCH]:
            try:
                results[text] = compile_expression(text, NAMES).evaluate(ENV)
            except ExpressionError as exc:
                results[text] = exc
            except _Forbidden as exc:  # pragma: no cover - only if the evaluator is unsafe
                results[text] = exc
    assert calls == []
    for text, expected in VALID_BATCH.items():
        assert results[text] == expected, text
    for text in MALICIOUS_BATCH:
        assert isinstance(results[text], ExpressionError), text


def test_module_never_calls_eval_exec_compile() -> None:
    source = Path(expr_module.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    forbidden_calls = {"eval", "exec", "compile", "__import__", "open", "getattr", "globals"}
    forbidden_modules = {"os", "subprocess", "importlib", "sys", "builtins", "pickle"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in forbidden_calls, node.func.id
        if isinstance(node, ast.Import):
            assert not {alias.name.split(".")[0] for alias in node.names} & forbidden_modules
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] not in forbidden_modules


# --- property tests against Python's own evaluation ----------------------------

INT_NAMES = ("x1", "x2", "x3")
_INT_LEAF = st.one_of(
    st.integers(-12, 12).map(lambda n: f"({n})"),
    st.sampled_from(INT_NAMES),
    st.sampled_from(["True", "False"]),
)
_INT_BINARY = [
    "+",
    "-",
    "*",
    "//",
    "%",
    "^",
    "&",
    "|",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "and",
    "or",
]


def _extend(
    children: st.SearchStrategy[str], binary_ops: list[str], unary_ops: list[str]
) -> st.SearchStrategy[str]:
    """Compound expressions; exponents are small literals so sizes stay bounded."""
    return st.one_of(
        st.tuples(children, st.sampled_from(binary_ops), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(children, st.integers(0, 3)).map(lambda t: f"({t[0]} ** {t[1]})"),
        st.tuples(st.sampled_from(unary_ops), children).map(lambda t: f"({t[0]}{t[1]})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(children, min_size=2, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.lists(children, min_size=0, max_size=3).map(lambda xs: f"sum([{', '.join(xs)}])"),
        children.map(lambda c: f"abs({c})"),
    )


INT_EXPRESSIONS = st.recursive(
    _INT_LEAF, lambda c: _extend(c, _INT_BINARY, ["-", "+", "~", "not "]), max_leaves=10
)

_PYTHON_FUNCTIONS = {"min": min, "max": max, "abs": abs, "sum": sum}


def _python_value(text: str, env: dict[str, object]) -> object:
    """Reference result from Python itself (test-only; the evaluator never does this)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. ~True is deprecated in newer Pythons
        return eval(text, {"__builtins__": _PYTHON_FUNCTIONS}, dict(env))


def _normalised(value: object) -> int | Fraction:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Fraction) and value.denominator == 1:
        return value.numerator
    assert isinstance(value, int | Fraction)
    return value


def _check_against_python(text: str, env: dict[str, object]) -> None:
    expression = compile_expression(text, env.keys())
    try:
        expected = _python_value(text, env)
    except ZeroDivisionError:
        with pytest.raises(ExpressionError, match="division by zero"):
            expression.evaluate(env)
        return
    expected = _normalised(expected)
    if isinstance(expected, int) and expected.bit_length() > 4096:
        with pytest.raises(ExpressionError, match="too large"):
            expression.evaluate(env)
        return
    got = expression.evaluate(env)
    assert got == expected, text
    assert type(got) is type(expected), text


@settings(max_examples=examples(300), deadline=None)
@given(
    text=INT_EXPRESSIONS.filter(lambda t: t.count("**") <= 3),
    values=st.tuples(*[st.integers(-20, 20)] * len(INT_NAMES)),
)
def test_integer_expressions_agree_with_python(text: str, values: tuple[int, ...]) -> None:
    _check_against_python(text, dict(zip(INT_NAMES, values, strict=True)))


FRACTION_NAMES = ("a", "b", "c")
_FRACTION_VALUES = st.one_of(
    st.integers(-9, 9), st.fractions(min_value=-9, max_value=9, max_denominator=9)
)
FRACTION_EXPRESSIONS = st.recursive(
    st.one_of(st.integers(-9, 9).map(lambda n: f"({n})"), st.sampled_from(FRACTION_NAMES)),
    lambda c: _extend(
        c,
        ["+", "-", "*", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"],
        ["-", "+", "not "],
    ),
    max_leaves=8,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    text=FRACTION_EXPRESSIONS.filter(lambda t: t.count("**") <= 2),
    values=st.tuples(*[_FRACTION_VALUES] * len(FRACTION_NAMES)),
    negative_power=st.integers(-3, -1),
)
def test_fraction_expressions_agree_with_python(
    text: str, values: tuple[int | Fraction, ...], negative_power: int
) -> None:
    env: dict[str, object] = dict(zip(FRACTION_NAMES, values, strict=True))
    _check_against_python(text, env)
    # Python's int ** -n is a float, so the exact reference is built by hand.
    powered = compile_expression(f"({text}) ** ({negative_power})", env.keys())
    try:
        base = _normalised(_python_value(text, env))
    except ZeroDivisionError:
        return
    if base == 0:
        with pytest.raises(ExpressionError, match="division by zero"):
            powered.evaluate(env)
    else:
        assert powered.evaluate(env) == _normalised(Fraction(base) ** negative_power)


@settings(max_examples=examples(200), deadline=None)
@given(a=_FRACTION_VALUES, b=_FRACTION_VALUES, c=_FRACTION_VALUES)
def test_division_agrees_with_fractions(a, b, c) -> None:
    env = {"a": a, "b": b, "c": c}
    expression = compile_expression("(a + c) / b - c / 3", env.keys())
    if b == 0:
        with pytest.raises(ExpressionError, match="division by zero"):
            expression.evaluate(env)
        return
    expected = (Fraction(a) + c) / b - Fraction(c) / 3
    assert expression.evaluate(env) == expected


_TOKENS = [
    "x1",
    "x",
    "a",
    "9",
    "0",
    "2",
    "1.5",
    "**",
    "*",
    "//",
    "/",
    "%",
    "+",
    "-",
    "~",
    "^",
    "&",
    "|",
    "(",
    ")",
    "[",
    "]",
    ",",
    " ",
    "sum",
    "min",
    "max",
    "abs",
    "open",
    "__class__",
    ".",
    "'",
    "lambda",
    ":",
    " if ",
    " else ",
    " not ",
    " and ",
    " or ",
    "<",
    "==",
    ">=",
    "=",
    " for ",
    " in ",
    "@",
    "<<",
    "{",
    "}",
    "__import__",
    "x[0]",
    ":=",
    "*x",
    "\n",
]


@settings(max_examples=examples(400), deadline=1000)
@given(st.lists(st.sampled_from(_TOKENS), max_size=14).map("".join))
def test_arbitrary_text_fails_only_with_expression_error(text: str) -> None:
    env = {"x1": 3, "x": (1, 2, 3), "a": Fraction(1, 3)}
    try:
        result = compile_expression(text, env.keys()).evaluate(env)
    except ExpressionError as exc:
        assert "\n" not in str(exc)
    else:
        assert type(result) in (int, Fraction)
        assert not (isinstance(result, Fraction) and result.denominator == 1)
