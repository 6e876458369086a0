"""Both ends of a worst-case LP's bracket recomputed from its dense channel (no Kronecker
products), for the tests of the worst-case hints: a reference the fast paths are checked
against; and the whole `verify --json` run those tests end with."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from dpverify.cli import main


def dense_bounds(lp, prior, rule) -> tuple[float, float]:
    """(the rule's worst-case accuracy, the prior's bound) from the dense channel."""
    C, G = lp.channel.floats(), lp.gain
    q = np.clip(rule, 0, None)
    q = q / q.sum(axis=1, keepdims=True)
    p = np.clip(prior, 0, None)
    p = p / p.sum()
    return float(((C @ q) * G).sum(axis=1).min()), float((C.T @ (p[:, None] * G)).max(1).sum())


def verify_json(tmp_path, text: str) -> dict:
    """`dpverify verify FILE --json` on a problem written to tmp_path: the problem's
    result (exit 0 or 3 expected: decided or undecided, never bad input or a crash)."""
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["verify", str(path), "--json"])
    assert result.exit_code in (0, 3), result.output[-800:]
    return json.loads(result.output)[0]
