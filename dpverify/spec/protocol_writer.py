"""Protocol files written by dpverify (`falsify --save-best`, counterexamples): the text of a
`kind = "protocol"` file that `dpverify audit` reads back (docs/format.md)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import tomlkit

PROBLEM_COPIED = ("parties", "alphabet", "epsilon", "lambda", "accuracy")


def protocol_text(problem: dict[str, Any], *, name: str, description: str,
                  speakers: Sequence[int], kernels: Sequence[np.ndarray],
                  comment: str = "") -> str:
    """A protocol file: `[problem]` with the claims and accuracies of `problem` (a parsed
    multi-party problem file), the rounds (`kernels[r][p]`: the kernel after prefix p, in
    mixed radix; floats, or Fractions for an exact protocol), and the problem's agents, as
    they were written."""
    doc = tomlkit.document()
    if comment:
        for line in comment.splitlines():
            doc.add(tomlkit.comment(line))
    head = tomlkit.table()
    head.add("kind", "protocol")
    head.add("name", name)
    head.add("description", description)
    source = problem.get("problem", {})
    for key in PROBLEM_COPIED:
        if key in source:
            head.add(key, source[key])
    doc.add("problem", head)
    rounds = tomlkit.aot()
    sizes: list[int] = []
    for speaker, K in zip(speakers, kernels, strict=True):
        table = tomlkit.table()
        table.add("party", int(speaker))
        table.add("messages", int(K.shape[2]))
        if all(np.array_equal(K[0], K[p]) for p in range(K.shape[0])):
            table.add("kernel", _matrix(K[0]))
        else:
            keyed = tomlkit.table()
            for p in range(K.shape[0]):
                keyed.add(_prefix(p, sizes), _matrix(K[p]))
            table.add("kernel", keyed)
        rounds.append(table)
        sizes.append(int(K.shape[2]))
    doc.add("round", rounds)
    for key in ("observer", "party"):
        if key in problem:
            doc.add(key, problem[key])
    return tomlkit.dumps(doc)


def _matrix(rows: np.ndarray) -> Any:
    """Kernel rows: floats, or exact "p/q" strings for Fractions (an exact protocol)."""
    out = tomlkit.array()
    for row in rows:
        out.append([_entry(v) for v in row])
    return out


def _entry(v: Any) -> float | str:
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    return float(v)


def _prefix(p: int, sizes: Sequence[int]) -> str:
    """Prefix number p (mixed radix over the earlier rounds' sizes) as its key."""
    digits = []
    for size in reversed(sizes):
        digits.append(p % size)
        p //= size
    return ",".join(str(d) for d in reversed(digits))
