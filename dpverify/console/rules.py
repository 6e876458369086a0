"""Decision rules on the command line: one row of a rule as text (`verify --show-rules`,
`audit --show-rules`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpverify.console.numbers import rational


def rule_label(outputs: Sequence[Any], row: Any) -> str:
    """A decision-rule row as text: the output, or a distribution for a randomised rule."""
    row = np.asarray(row)
    if np.isclose(row.max(), 1.0, atol=1e-9):
        return _out(outputs[int(np.argmax(row))])
    return ", ".join(f"{_out(outputs[j])}: {p:.3g}" for j, p in enumerate(row) if p > 1e-9)


def _out(v: Any) -> str:
    return rational(v) if hasattr(v, "denominator") else str(v)
