"""Inputs with more than two symbols: `alphabet = m` in `[problem]` (docs/format.md,
"More than two symbols"; docs/theory.md, section 6).

Party i holds a symbol x_i in 0..m_i-1. Inputs are numbered in mixed radix with x1 the
most significant symbol (big-endian, as for bits), so a table has prod m_i entries. With
every m_i = 2 this is exactly the order of bits. The named functions of symbols are
defined on the sum of the symbols where the format says so, and reduce to the functions
of bits when every m_i = 2 (`xor` is the sum mod the smallest m_i; `majority` is 1 when
the sum exceeds half its largest value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpverify.errors import SpecError

BINARY = 2
MAX_ALPHABET = 16  # 2^16 - 2 extreme rays per party: far beyond any LP the guard admits
# Tables are tabulated over every input: beyond this many the size guard refuses anyway.
MAX_SYMBOL_INPUTS = 1 << 20
# names of functions of symbols: the binary names, and three that are only needed there
SYMBOL_NAMES = ("sum", "max", "min", "xor", "mod:q", "majority", "threshold:t", "bit:i")
BINARY_ONLY = {"and": "min", "or": "max"}


def read_alphabets(problem: Any, k: int) -> tuple[int, ...]:
    """`problem.alphabet`: one integer >= 2 for every party, or a list of k (default 2).
    `problem` is a spec.reader.Table."""
    if not problem.has("alphabet"):
        return (BINARY,) * k
    value = problem.get("alphabet")
    key = problem.key("alphabet")
    allowed = (f"an integer 2..{MAX_ALPHABET} (the number of input symbols of every party), "
               f"or a list of k = {k} of them")
    items = value if isinstance(value, list) else [value] * k
    if isinstance(value, list) and len(value) != k:
        raise SpecError(problem.file, key, value,
                        f"a list needs exactly {k} entries, one per party (parties = {k}), "
                        "or give a single integer")
    out = []
    for i, m in enumerate(items):
        where = f"{key}[{i}]" if isinstance(value, list) else key
        if isinstance(m, bool) or not isinstance(m, int) or not BINARY <= m <= MAX_ALPHABET:
            raise SpecError(problem.file, where, m, f"must be {allowed}")
        out.append(m)
    if math.prod(out) > MAX_SYMBOL_INPUTS:
        raise SpecError(problem.file, key, value,
                        f"{math.prod(out):,} inputs (the product of the alphabets); at most "
                        f"{MAX_SYMBOL_INPUTS:,} are tabulated")
    return tuple(out)


def is_binary(alphabets: Sequence[int]) -> bool:
    return all(m == BINARY for m in alphabets)


def input_symbols(alphabets: Sequence[int]) -> np.ndarray:
    """(n, k) array of every input's symbols, x1 first (the most significant; mixed radix)."""
    grids = np.indices(tuple(alphabets)).reshape(len(alphabets), -1)
    return grids.T.astype(np.int64)


def input_name(symbols: Sequence[int], alphabets: Sequence[int]) -> str:
    """An input as written in messages and table keys: its digits ("0210") while every
    alphabet has at most 10 symbols, else the symbols joined with "," ("0,12,3")."""
    if max(alphabets) <= 10:
        return "".join(str(int(s)) for s in symbols)
    return ",".join(str(int(s)) for s in symbols)


def input_names(alphabets: Sequence[int]) -> list[str]:
    return [input_name(row, alphabets) for row in input_symbols(alphabets).tolist()]


def named_symbol_values(name: str, param: int, alphabets: Sequence[int]) -> list[int]:
    """The named functions of spec.md on symbols (module docstring), tabulated."""
    symbols = input_symbols(alphabets)
    total = symbols.sum(axis=1)
    largest = sum(m - 1 for m in alphabets)
    if name == "sum":
        out = total
    elif name == "max":
        out = symbols.max(axis=1)
    elif name == "min":
        out = symbols.min(axis=1)
    elif name == "xor":
        out = total % min(alphabets)
    elif name == "mod":
        out = total % param
    elif name == "majority":
        out = (2 * total > largest).astype(np.int64)
    elif name == "threshold":
        out = (total >= param).astype(np.int64)
    elif name == "bit":
        out = symbols[:, param - 1]
    else:  # the loader builds no other name for symbols
        raise ValueError(f"unknown function of symbols {name!r}")
    return [int(v) for v in out]


def symbol_function(table: Any, value: str, alphabets: Sequence[int]) -> tuple[str, int]:
    """(name, param) of a named function on symbols, or a SpecError naming the key: `and`
    and `or` are for bits, `threshold:t` takes 0 <= t <= sum(m_i - 1), `mod:q` q >= 2."""
    key = table.key("function")
    name, _, arg = value.partition(":")
    name = "xor" if name == "parity" else name
    if name in BINARY_ONLY and not arg:
        raise SpecError(table.file, key, value,
                        f"`{name}` is defined on bits; with alphabet > 2 write "
                        f"`{BINARY_ONLY[name]}` or an expression")
    limits = {"threshold": (0, sum(m - 1 for m in alphabets)), "mod": (2, 10**9),
              "bit": (1, len(alphabets))}
    if name in limits:
        low, high = limits[name]
        text = arg.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 9):
            raise SpecError(table.file, key, value,
                            f"write {name}:N with an integer N in {low}..{high}")
        param = int(text)
        if not low <= param <= high:
            raise SpecError(table.file, key, value, f"{name}:N needs {low} <= N <= {high}"
                            + (" (the largest sum of the symbols)" if name == "threshold"
                               else ""))
        return name, param
    if name in ("sum", "max", "min", "xor", "majority") and not arg:
        return name, 0
    raise SpecError(table.file, key, value,
                    "unknown function; allowed with alphabet > 2: a name ("
                    + ", ".join(SYMBOL_NAMES) + "), { expr = \"...\" } or { table = [...] }")
