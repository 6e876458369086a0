"""Tabulating functions and gains over the 2^k inputs (pure, no I/O).

Input order is big-endian (theory.md): x1 is the most significant bit of the index.
"""

from __future__ import annotations

import weakref
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError, SpecError
from dpverify.spec.alphabet import input_name, input_symbols, is_binary
from dpverify.spec.expr import Expression, ExpressionError, compile_expression
from dpverify.spec.functions import named_values
from dpverify.spec.model import AgentSpec, AgentTable, FunctionDef, GainDef, MultipartySpec

# Tabulating 2^k inputs in Python is the loader's only cost that grows with k; beyond
# this many parties the size guard refuses the problem long before a table is needed.
MAX_TABULATED_PARTIES = 20

# Tables computed once per spec object and agent (a spec is frozen; the cache lives beside).
_TABLES: weakref.WeakKeyDictionary[MultipartySpec, dict[str, AgentTable]] = (
    weakref.WeakKeyDictionary())



def input_bits(k: int) -> np.ndarray:
    """(2^k, k) array of the bits of every input, x1 first (the most significant)."""
    index = np.arange(1 << k, dtype=np.int64)
    shifts = np.arange(k - 1, -1, -1, dtype=np.int64)
    return ((index[:, None] >> shifts[None, :]) & 1).astype(np.int64)


def named_function_values(name: str, param: int, k: int) -> list[int]:
    """The named functions of spec.md on k bits, tabulated (spec/functions.py)."""
    return named_values(name, param, input_bits(k), (2,) * k)


def function_values(fn: FunctionDef, k: int, *, file: str, key: str,
                    alphabets: tuple[int, ...] | None = None) -> tuple[Fraction, ...]:
    """f(x) for every input, in input order; `alphabets` (input symbols per party) when
    some party holds more than a bit (dpverify.spec.alphabet)."""
    symbols = alphabets is not None and not is_binary(alphabets)
    if fn.kind == "named":
        named = (named_values(fn.name, fn.param, input_symbols(alphabets or ()),
                              alphabets or ()) if symbols
                 else named_function_values(fn.name, fn.param, k))
        return tuple(Fraction(v) for v in named)
    if fn.kind == "table":
        return fn.values
    if fn.kind == "counts":
        return tuple(fn.values[int(c)] for c in input_bits(k).sum(axis=1))
    names = [f"x{i}" for i in range(1, k + 1)] + ["x", "k"]
    expression = compile_expression(fn.text, names)
    rows = (input_symbols(alphabets or ()) if symbols else input_bits(k)).tolist()
    values: list[Fraction] = []
    for row in rows:
        env: dict[str, object] = {f"x{i + 1}": b for i, b in enumerate(row)}
        env["x"] = tuple(row)
        env["k"] = k
        try:
            values.append(Fraction(expression.evaluate(env)))
        except ExpressionError as exc:
            x = input_name(row, alphabets) if symbols and alphabets else "".join(map(str, row))
            raise SpecError(file, key, fn.text, f"fails at x = {x}: {exc}") from None
    return tuple(values)


def gain_value(gain: GainDef, f: Fraction, y: Fraction,
               expression: Expression | None = None) -> Fraction:
    """w(f, y) for a named or expression gain (the matrix gain is indexed, not evaluated)."""
    if gain.kind == "named":
        if gain.name == "indicator":
            return Fraction(1 if f == y else 0)
        if gain.name == "-abs":
            return -abs(f - y)
        return -((f - y) ** 2)
    assert expression is not None  # an expression gain comes with its compiled expression
    return Fraction(expression.evaluate({"f": f, "y": y}))


def tabulated(spec: MultipartySpec, agent: AgentSpec) -> AgentTable | None:
    """The agent's table if it was computed already (no work otherwise)."""
    return _TABLES.get(spec, {}).get(agent.name)


def tabulate(spec: MultipartySpec, agent: AgentSpec) -> AgentTable:
    """f(x) and w(f(x), y) for every input x and output y of `agent` (computed once)."""
    cached = _TABLES.get(spec, {}).get(agent.name)
    if cached is not None:
        return cached
    k = spec.parties
    if k > MAX_TABULATED_PARTIES and spec.binary:
        raise SizeLimitError(
            f"{spec.source}: {k} parties means 2^{k} inputs; dpverify tabulates at most "
            f"{MAX_TABULATED_PARTIES} parties"
        )
    file = spec.source
    fn_key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    values = function_values(agent.function, k, file=file, key=fn_key,
                             alphabets=spec.alphabets)
    table = table_of(agent, values, file)
    _TABLES.setdefault(spec, {})[agent.name] = table
    return table


def table_of(agent: AgentSpec, values: tuple[Fraction, ...], file: str) -> AgentTable:
    """The agent's gains w(f, y) for a list of function values (one per input, or one per
    orbit of inputs: dpverify.spec.symmetric): the outputs default to the sorted distinct
    values; gain errors are SpecErrors naming the key."""
    distinct = tuple(sorted(set(values)))
    outputs = agent.outputs if agent.outputs is not None else distinct
    by_value = gain_rows(agent, distinct, outputs, file)
    gain_key = f"{agent.key}.gain"
    floats: dict[Fraction, list[float]] = {}
    for v, gains in by_value.items():
        try:
            floats[v] = [float(w) for w in gains]
        except OverflowError:
            raise SpecError(file, gain_key, agent.gain.describe(),
                            f"a gain at f = {_show(v)} is too large for a float "
                            f"(at most about 1e308 in absolute value)") from None
    gain_exact = tuple(by_value[v] for v in values)
    gain_float = np.array([floats[v] for v in values], dtype=np.float64)
    return AgentTable(values=values, outputs=tuple(outputs), gain_exact=gain_exact,
                      gain=gain_float.reshape(len(values), len(outputs)))


def gain_rows(agent: AgentSpec, distinct: tuple[Fraction, ...], outputs: tuple[Fraction, ...],
              file: str) -> dict[Fraction, tuple[Fraction, ...]]:
    """w(f, y) for every distinct function value f and output y, exactly."""
    gain = agent.gain
    gain_key = f"{agent.key}.gain"
    if gain.kind == "matrix":
        return _matrix_gains(gain, distinct, outputs, file, gain_key)
    expression = compile_expression(gain.text, ["f", "y"]) if gain.kind == "expr" else None
    by_value = {}
    for v in distinct:
        row: list[Fraction] = []
        for y in outputs:
            try:
                row.append(gain_value(gain, v, y, expression))
            except ExpressionError as exc:
                raise SpecError(file, f"{gain_key}.expr", gain.text,
                                f"fails at f = {_show(v)}, y = {_show(y)}: {exc}") from None
        by_value[v] = tuple(row)
    return by_value


def _matrix_gains(gain: GainDef, distinct: tuple[Fraction, ...], outputs: tuple[Fraction, ...],
                  file: str, gain_key: str) -> dict[Fraction, tuple[Fraction, ...]]:
    """A gain matrix's rows by function value: one row per distinct value (sorted), one
    entry per output; a SpecError naming the row otherwise."""
    if len(gain.matrix) != len(distinct):
        raise SpecError(
            file, f"{gain_key}.matrix", f"{len(gain.matrix)} rows",
            f"a gain matrix needs one row per distinct function value, sorted "
            f"({len(distinct)}: {', '.join(_show(v) for v in distinct)})",
        )
    for r, matrix_row in enumerate(gain.matrix):
        if len(matrix_row) != len(outputs):
            raise SpecError(
                file, f"{gain_key}.matrix[{r}]", f"{len(matrix_row)} entries",
                f"every row needs one entry per output ({len(outputs)}: "
                f"{', '.join(_show(v) for v in outputs)})",
            )
    row_of = {v: i for i, v in enumerate(distinct)}
    return {v: gain.matrix[row_of[v]] for v in distinct}


def _show(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else str(v)
