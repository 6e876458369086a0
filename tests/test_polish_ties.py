"""The polish's finer ties (theory/worst_polish.py, FINER_TIES): where the prior's scores
tie within TIE on more columns than the rule's system can take (MAX_NULL), the next tie
is tried; the first rule whose worst case reaches `enough` ends the search. Built by hand:
two rows of equal mass, two outputs (the indicator gain), and columns whose two scores
differ by 0 (one column), 1e-8 (many) or a half (the rest)."""

from __future__ import annotations

import numpy as np

from dpverify.theory import worst_polish
from dpverify.theory.worst_polish import FINER_TIES, MAX_NULL, TIE, polish_rule


def _block(near: int = MAX_NULL):
    """Columns in mirrored pairs (each favours one row, by 1e-8 or by a half) and one
    column that ties exactly: a symmetric rule that splits the tied column evenly leaves
    both rows equally accurate, so the prior (1/2, 1/2) and that rule are optimal."""
    rng = np.random.default_rng(1)
    pairs = []
    for spread in [1e-8] * near + [0.5] * 20:
        b = rng.uniform(0.5, 1.0)
        pairs += [(b, b * (1 + spread)), (b * (1 + spread), b)]
    C = np.array([(0.7, 0.7), *pairs]).T  # rows: x = 0, 1; columns tau
    G = np.eye(2)  # the gain of output y on row x: [x == y]
    return C, G, np.array([0.5, 0.5])


def _worst(C, G, rule) -> float:
    return float((((C @ rule) * G).sum(axis=1)).min())


def test_a_finer_tie_gives_a_rule_where_the_coarse_one_gives_none():
    C, G, prior = _block()
    assert TIE > 1e-8 > FINER_TIES[0]
    # control: within TIE the 1e-8 columns tie too, a null space beyond MAX_NULL
    assert polish_rule(C, G, prior, None, (TIE,)) is None
    fine = polish_rule(C, G, prior, None, (FINER_TIES[0],))
    both = polish_rule(C, G, prior, None, (TIE, FINER_TIES[0]))
    assert fine is not None and both is not None and np.array_equal(fine, both)
    assert np.allclose(both.sum(axis=1), 1.0) and both.min() >= 0
    # both rows tight: the rule's worst case is the prior's bound sum_tau max_y z
    z = C.T @ (prior[:, None] * G)
    assert abs(_worst(C, G, both) - z.max(axis=1).sum()) < 1e-12
    assert abs(both[0, 0] - 0.5) < 1e-12  # the tied column split evenly


def test_the_ties_stop_at_the_first_rule_that_is_enough(monkeypatch):
    C, G, prior = _block()
    seen: list[int] = []
    inner = worst_polish._rule_on_ties

    def counted(C_, G_, z, tied, support, solve):
        seen.append(sum(len(t) > 1 for t in tied))
        return inner(C_, G_, z, tied, support, solve)

    monkeypatch.setattr(worst_polish, "_rule_on_ties", counted)
    ties = (FINER_TIES[0], FINER_TIES[1])
    polish_rule(C, G, prior, None, ties, enough=-np.inf)  # any rule is enough
    assert len(seen) == 1
    seen.clear()
    polish_rule(C, G, prior, None, ties)  # control: never enough, every tie tried
    assert len(seen) == 2
