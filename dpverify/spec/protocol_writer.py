"""Protocol files written by dpverify (`falsify --save-best`, counterexamples, witnesses):
the document of a `kind = "protocol"` file that `dpverify audit` reads back
(docs/format.md), written by the one TOML writer (spec/documents.py)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.spec.documents import toml_text

PROBLEM_COPIED = ("parties", "alphabet", "epsilon", "lambda", "delta", "accuracy")


def protocol_text(problem: dict[str, Any], *, name: str, description: str,
                  speakers: Sequence[int], kernels: Sequence[np.ndarray],
                  comment: str = "") -> str:
    """A protocol file: `[problem]` with the claims and accuracies of `problem` (a parsed
    multi-party problem file), the rounds (`kernels[r][p]`: the kernel after prefix p, in
    mixed radix; floats, or Fractions for an exact protocol), and the problem's agents, as
    they were written."""
    return toml_text(protocol_document(problem, name=name, description=description,
                                       speakers=speakers, kernels=kernels),
                     "<protocol>", comment=comment)


def protocol_document(problem: dict[str, Any], *, name: str, description: str,
                      speakers: Sequence[int], kernels: Sequence[np.ndarray]
                      ) -> dict[str, Any]:
    """The document of `protocol_text` (plain data)."""
    source = problem.get("problem", {})
    head: dict[str, Any] = {"kind": "protocol", "name": name, "description": description}
    head.update({key: source[key] for key in PROBLEM_COPIED if key in source})
    rounds = []
    sizes: list[int] = []
    for speaker, K in zip(speakers, kernels, strict=True):
        if all(np.array_equal(K[0], K[p]) for p in range(K.shape[0])):
            kernel: Any = _matrix(K[0])
        else:
            kernel = {_prefix(p, sizes): _matrix(K[p]) for p in range(K.shape[0])}
        rounds.append({"party": int(speaker), "messages": int(K.shape[2]), "kernel": kernel})
        sizes.append(int(K.shape[2]))
    out: dict[str, Any] = {"problem": head, "round": rounds}
    out.update({key: problem[key] for key in ("observer", "party") if key in problem})
    return out


def _matrix(rows: np.ndarray) -> list[list[float | Fraction]]:
    """Kernel rows: floats, or Fractions (written as exact "p/q") for an exact protocol."""
    return [[v if isinstance(v, Fraction) else float(v) for v in row] for row in rows]


def _prefix(p: int, sizes: Sequence[int]) -> str:
    """Prefix number p (mixed radix over the earlier rounds' sizes) as its key."""
    digits = []
    for size in reversed(sizes):
        digits.append(p % size)
        p //= size
    return ",".join(str(d) for d in reversed(digits))
