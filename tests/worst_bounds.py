"""Both ends of a worst-case LP's bracket recomputed from its dense channel (no Kronecker
products), for the tests of the worst-case hints: a reference the fast paths are checked
against."""

from __future__ import annotations

import numpy as np


def dense_bounds(lp, prior, rule) -> tuple[float, float]:
    """(the rule's worst-case accuracy, the prior's bound) from the dense channel."""
    C, G = lp.channel.floats(), lp.gain
    q = np.clip(rule, 0, None)
    q = q / q.sum(axis=1, keepdims=True)
    p = np.clip(prior, 0, None)
    p = p / p.sum()
    return float(((C @ q) * G).sum(axis=1).min()), float((C.T @ (p[:, None] * G)).max(1).sum())
