"""The named functions of the format (docs/format.md, "Functions"), defined once.

Every named function is a function of the inputs' sum, smallest and largest symbol, or one
party's input, so one definition serves bits (a symbol in 0..1 per party), inputs with more
symbols (docs/theory.md, section 6) and the functions of the number of ones that need no
`2^k` table (spec/counts.py): on bits `and` is the smallest bit, `or` the largest, `xor`
the sum mod 2, `majority` is 1 when the sum exceeds half the largest sum k. On symbols
`xor` is the sum mod the smallest alphabet and `majority` is 1 when the sum exceeds half
its largest value, so both reduce to the functions of bits when every alphabet is 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from dpverify.errors import SpecError

# What a file may name: on bits, and on inputs with more than two symbols ("parity" is
# another name of "xor"); the names with a parameter are written `name:N`.
BIT_NAMES = ("xor", "parity", "and", "or", "majority", "sum", "threshold:t", "bit:i")
SYMBOL_NAMES = ("sum", "max", "min", "xor", "mod:q", "majority", "threshold:t", "bit:i")
PARAMETERISED = ("threshold", "bit", "mod")
ALIASES = {"parity": "xor"}
BINARY_ONLY = {"and": "min", "or": "max"}  # names of bits, and their names on symbols
_INTEGER_ARG = re.compile(r"\+?[0-9]{1,9}")  # ASCII digits only: "bit:\u00b2" is no integer
_LOWEST = ("and", "min")
_HIGHEST = ("or", "max")


def plain_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names of `names` that take no parameter."""
    return tuple(n for n in names if ":" not in n)


def written(name: str, param: int) -> str:
    """A named function as a file writes it: `threshold:2`, `bit:1`, `mod:3`, `xor`."""
    return f"{name}:{param}" if name in PARAMETERISED else name


def named_value(name: str, param: int, *, total: Any, largest: int, modulus: int,
                low: Any = None, high: Any = None,
                column: Callable[[int], Any] | None = None) -> Any:
    """f(x) of a named function from the inputs' `total` (their sum), the largest sum
    (`largest`, the sum of m_i - 1), the smallest alphabet (`modulus`), the smallest and
    largest symbol (`low`, `high`) and one party's input (`column(i)`, 1-based): integers,
    or numpy arrays over many inputs at once (comparisons give booleans)."""
    if name == "sum":
        return total
    if name in _LOWEST:
        return low
    if name in _HIGHEST:
        return high
    if name == "xor":
        return total % modulus
    if name == "mod":
        return total % param
    if name == "majority":
        return 2 * total > largest
    if name == "threshold":
        return total >= param
    if name == "bit" and column is not None:
        return column(param)
    raise ValueError(f"unknown named function {name!r}")


def named_values(name: str, param: int, rows: Any, alphabets: Sequence[int]) -> list[int]:
    """A named function tabulated: f(x) for every row of `rows` (an (n, k) numpy array of
    the inputs' symbols, bits when every alphabet is 2)."""
    out = named_value(name, param, total=rows.sum(axis=1),
                      largest=sum(m - 1 for m in alphabets), modulus=min(alphabets),
                      low=rows.min(axis=1) if name in _LOWEST else None,
                      high=rows.max(axis=1) if name in _HIGHEST else None,
                      column=lambda i: rows[:, i - 1])
    return [int(v) for v in out]


def named_count_value(name: str, param: int, count: int, k: int) -> int:
    """A named function of k bits as a function of the number of ones (`bit` is not one:
    ValueError)."""
    if name not in plain_names(BIT_NAMES) and name != "threshold":
        raise ValueError(f"{name!r} is not a function of the count of ones")
    return int(named_value(name, param, total=count, largest=k, modulus=2,
                           low=int(count == k), high=int(count > 0)))


# -- names in files --------------------------------------------------------------------------
def bit_function(table: Any, value: str, k: int) -> tuple[str, int] | None:
    """(name, param) of a named function of k bits written `value` at `table`'s
    `function` key, None when `value` names none; a SpecError for a bad parameter.
    `table` is a spec.reader.Table."""
    key = table.key("function")
    name, _, arg = value.partition(":")
    if name in ("threshold", "bit"):
        low = 1 if name == "bit" else 0
        if not _INTEGER_ARG.fullmatch(arg.strip()):
            raise SpecError(table.file, key, value,
                            f"write {name}:N with an integer N in {low}..{k}")
        param = int(arg)
        if not low <= param <= k:
            raise SpecError(table.file, key, value,
                            f"{name}:N needs {low} <= N <= {k} (parties = {k})")
        return name, param
    if value in plain_names(BIT_NAMES):
        return ALIASES.get(value, value), 0
    return None


def symbol_function(table: Any, value: str, alphabets: Sequence[int]) -> tuple[str, int]:
    """(name, param) of a named function on symbols, or a SpecError naming the key: `and`
    and `or` are for bits, `threshold:t` takes 0 <= t <= sum(m_i - 1), `mod:q` q >= 2."""
    key = table.key("function")
    name, _, arg = value.partition(":")
    name = ALIASES.get(name, name)
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
    if name in plain_names(SYMBOL_NAMES) and not arg:
        return name, 0
    raise SpecError(table.file, key, value,
                    "unknown function; allowed with alphabet > 2: a name ("
                    + ", ".join(SYMBOL_NAMES) + "), { expr = \"...\" } or { table = [...] }")
