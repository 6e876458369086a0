"""The exact solve of the repair's systems (theory/certificates/repair.py): Gauss-Jordan in
Fractions for a small system, python-flint's fmpq_mat for a large one
(policy.FLINT_RREF_ENTRIES). Both give the same reduced rows (the reduced row echelon form
is unique) on random systems, square, wide, tall, rank-deficient and inconsistent, and
both are the reduced row echelon form, checked from its definition; controls show that
the comparison and the check catch an elimination that is wrong."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from fractions import Fraction

import pytest

from dpverify.policy import FLINT_RREF_ENTRIES
from dpverify.theory.certificates.repair import rref_flint, rref_fractions


def random_system(rng: random.Random, rows: int, unknowns: int) -> tuple[list, list]:
    """Rational and integer entries, many zeros, some rows repeated or combined (so that
    the rank falls short) and an occasional inconsistent row."""
    den = rng.choice([1, 3 ** 4, 2 ** 10 * 5])
    a: list[list] = []
    b: list = []
    for _ in range(rows):
        if a and rng.random() < 0.25:  # a combination of two rows before: rank-deficient
            i, j = rng.randrange(len(a)), rng.randrange(len(a))
            c = Fraction(rng.randint(-3, 3), rng.randint(1, 3))
            a.append([x + c * y for x, y in zip(a[i], a[j], strict=True)])
            shift = Fraction(rng.randint(0, 1))  # 1: inconsistent
            b.append(b[i] + c * b[j] + shift)
            continue
        a.append([Fraction(rng.randint(-den, den), den) if rng.random() < 0.6 else 0
                  for _ in range(unknowns)])
        b.append(rng.randint(-5, 5))
    return a, b


def is_rref(reduced: list[list[Fraction]], a: list, b: list) -> bool:
    """Whether `reduced` is the reduced row echelon form of [a | b], from the definition:
    nonzero rows, leading ones moving right, zero above and below each leading one, as
    many rows as the rank, and each of its rows a combination of [a | b]'s and each of
    [a | b]'s rows a combination of its own (the same row space)."""
    width = len(a[0]) + 1 if a else 1
    leads = []
    for row in reduced:
        if len(row) != width or not any(row):
            return False
        lead = next(c for c, v in enumerate(row) if v)
        if row[lead] != 1 or (leads and lead <= leads[-1]):
            return False
        leads.append(lead)
    for r, lead in enumerate(leads):
        if any(reduced[s][lead] for s in range(len(reduced)) if s != r):
            return False
    # each original row is sum_r row[lead_r] * reduced[r] (the leading ones read it off)
    for row in ([*x, y] for x, y in zip(a, b, strict=True)):
        combined = [sum((Fraction(row[lead]) * reduced[r][c] for r, lead in enumerate(leads)),
                        Fraction(0)) for c in range(width)]
        if combined != [Fraction(v) for v in row]:
            return False
    return len(reduced) == rank(a, b)


def rank(a: list, b: list) -> int:
    """The rank of [a | b], by python-flint's fmpq_mat (an independent computation)."""
    from flint import fmpq, fmpq_mat

    if not a:
        return 0
    m = fmpq_mat([[fmpq(Fraction(v).numerator, Fraction(v).denominator) for v in [*x, y]]
                  for x, y in zip(a, b, strict=True)])
    return m.rank()


SHAPES = [(1, 1), (2, 3), (3, 2), (4, 4), (5, 8), (8, 5), (6, 6), (10, 12)]


@pytest.mark.parametrize("seed", range(12))
def test_fractions_and_flint_give_the_same_reduced_rows(seed):
    rng = random.Random(seed)
    for rows, unknowns in SHAPES:
        a, b = random_system(rng, rows, unknowns)
        ours, theirs = rref_fractions(a, b, unknowns), rref_flint(a, b, unknowns)
        assert ours == theirs, (rows, unknowns)
        assert is_rref(ours, a, b), (rows, unknowns)
        assert all(isinstance(v, Fraction) for row in ours + theirs for v in row)


def test_the_check_catches_a_wrong_elimination():
    """Controls: an elimination that skips the rows above the pivot (row echelon form, not
    reduced), one that drops the last reduced row, and one that scales a row by 2 are each
    caught by the definition's check and by the comparison with python-flint."""
    rng = random.Random(5)
    a, b = random_system(rng, 6, 6)
    while len(rref_flint(a, b, 6)) < 3:
        a, b = random_system(rng, 6, 6)
    right = rref_flint(a, b, 6)

    def echelon(a: list, b: list, width: int) -> list[list[Fraction]]:
        m = [[Fraction(v) for v in [*x, y]] for x, y in zip(a, b, strict=True)]
        r = 0
        for c in range(width + 1):
            p = next((i for i in range(r, len(m)) if m[i][c]), None)
            if p is None:
                continue
            m[r], m[p] = m[p], m[r]
            m[r] = [v / m[r][c] for v in m[r]]
            for i in range(r + 1, len(m)):  # below only
                m[i] = [v - m[i][c] * t for v, t in zip(m[i], m[r], strict=True)]
            r += 1
        return m[:r]

    wrong = [echelon(a, b, 6), right[:-1], [[2 * v for v in right[0]], *right[1:]]]
    for bad in wrong:
        assert bad != right
        assert not is_rref(bad, a, b)
    assert is_rref(right, a, b)


CHOICE = """
import json, sys
from fractions import Fraction
from dpverify.theory.certificates.repair import _solve_near
n = int(sys.argv[1])
rows = [[Fraction(int(i == j) + (i + j) % 3, 1 + i) for j in range(n)] for i in range(n)]
z = _solve_near(rows, [Fraction(1)] * n, [0.5] * n)
print(json.dumps(["flint" in sys.modules, [str(v) for v in z]]))
"""


def test_python_flint_only_beyond_the_threshold():
    """A system of up to policy.FLINT_RREF_ENTRIES entries is solved without loading
    python-flint; the control, one just beyond it, loads it; the solutions agree with
    both paths run side by side."""
    small = int((FLINT_RREF_ENTRIES + 0.25) ** 0.5 - 0.5)  # n (n + 1) <= the threshold
    runs = {}
    for n in (small, small + 1):
        done = subprocess.run([sys.executable, "-c", CHOICE, str(n)], capture_output=True,
                              text=True, check=True, timeout=60)
        runs[n] = json.loads(done.stdout)
    assert small * (small + 1) <= FLINT_RREF_ENTRIES < (small + 1) * (small + 2)
    assert runs[small][0] is False and runs[small + 1][0] is True
    for n, (_, z) in runs.items():
        rows = [[Fraction(int(i == j) + (i + j) % 3, 1 + i) for j in range(n)]
                for i in range(n)]
        assert rref_fractions(rows, [1] * n, n) == rref_flint(rows, [1] * n, n)
        solved = [Fraction(v) for v in z]
        assert [sum(r * v for r, v in zip(row, solved, strict=True)) for row in rows] == [1] * n
