"""Inputs with more than two symbols: `alphabet = m` in `[problem]` (docs/format.md,
"More than two symbols"; docs/theory.md, section 6).

Party i holds a symbol x_i in 0..m_i-1. Inputs are numbered in mixed radix with x1 the
most significant symbol (big-endian, as for bits), so a table has prod m_i entries. With
every m_i = 2 this is exactly the order of bits. The named functions of symbols are those
of bits, generalised (spec/functions.py).
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
