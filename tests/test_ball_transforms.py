"""The class transforms in arb balls (issue 25), on both sides: the checker's class factor
(checker/intervals.py, BallClass: one arb_mat product for every fiber, the recursion above
MATRIX_CLASS) and the construction's (theory/interval.py: class_matrix, orbit_transform)
enclose the exact transform, as the recursions they replace do; a party's scores and
accuracies on its own bit only (both sides) are those of the full transform; and the
checker's reading shortcuts (a repeated string read once, a rule's zeros skipped) keep
their checks. Each with a negative control: a wrong level, a wrong class, a bad entry.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from flint import arb, ctx, fmpq

from dpverify.checker import core, factors
from dpverify.checker.claim import CheckFailed, read_rules
from dpverify.checker.fields import CertificateFormatError, matrix
from dpverify.checker.intervals import (
    ARB_BITS,
    MATRIX_CLASS,
    BallClass,
    ball,
    best,
    label_scores,
    rule_value,
)
from dpverify.theory import interval as theory_interval
from dpverify.theory.certificates.format import nested_strings
from dpverify.theory.orbits.certificates import OrbitProblem
from dpverify.theory.orbits.interval import _scores, _unit_balls, rule_accuracies


@pytest.fixture(autouse=True)
def _precision():
    old = ctx.prec
    ctx.prec = ARB_BITS
    yield
    ctx.prec = old


def _exact_mix(n: int, lam: Fraction, chunks: list[list[int]]) -> list[list[Fraction]]:
    """out[s][f] = sum_a F[a][s] chunks[a][f], exactly (the exact checker's integers)."""
    exact = factors.ClassOrbits(n, lam)
    return [[Fraction(v, exact.scale) for v in row] for row in exact.mix(chunks)]


def _chunks(n: int, fibers: int, rng: random.Random) -> list[list[int]]:
    """Non-negative integer fibers, a third of the entries zero (as a part's columns)."""
    return [[rng.randint(1, 1000) if rng.random() > 1 / 3 else 0 for _ in range(fibers)]
            for _ in range(n + 1)]


def _encloses(balls, exact) -> bool:
    """Every ball holds its exact value (the rational made a ball at 4096 bits: at the
    balls' own precision its radius alone could stick out)."""
    old, ctx.prec = ctx.prec, 4096
    try:
        return all(b.contains(fmpq(x.numerator, x.denominator))
                   for brow, xrow in zip(balls, exact, strict=True)
                   for b, x in zip(brow, xrow, strict=True))
    finally:
        ctx.prec = old


def _tight(balls) -> bool:
    """Every ball within 2^-80 of its midpoint (relative)."""
    return all(b.rad() <= abs(b.mid()) * arb(2) ** -80 for row in balls for b in row)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 30, MATRIX_CLASS + 6])
def test_the_checkers_class_matrix_encloses_the_exact_transform(n):
    """BallClass.mix (the arb_mat product up to MATRIX_CLASS parties, the recursion above)
    and the recursion fiber by fiber contain the exact transform, tightly; control: the
    exact transform at a level 1/1000 away is outside."""
    rng = random.Random(n)
    lam = Fraction(rng.randint(11, 40), rng.randint(2, 10))
    chunks = _chunks(n, 9, rng)
    cls = BallClass(n, lam)
    mixed = cls.mix([[arb(v) for v in row] for row in chunks])
    fibers = [cls.fiber([arb(v) for v in column]) for column in zip(*chunks, strict=True)]
    recursive = [list(row) for row in zip(*fibers, strict=True)]
    exact = _exact_mix(n, lam, chunks)
    assert _encloses(mixed, exact) and _encloses(recursive, exact)
    assert _tight(mixed) and _tight(recursive)
    assert not _encloses(mixed, _exact_mix(n, lam + Fraction(1, 1000), chunks))


@pytest.mark.parametrize("n", [1, 5, 24])
def test_the_constructions_class_matrix_equals_its_recursion(n):
    """class_matrix(p, q, n) * y and class_transform(p, q, n, y) both contain the exact
    transform (here from the exact checker's integers); control: the transposed matrix
    does not."""
    from flint import arb_mat

    rng = random.Random(100 + n)
    p, q = rng.randint(11, 40), rng.randint(2, 10)
    y = _chunks(n, 1, rng)
    exact = _exact_mix(n, Fraction(p, q), y)
    with theory_interval.precision(theory_interval.PRECISION):
        matrix_ = theory_interval.class_matrix(p, q, n)
        product = (matrix_ * arb_mat([[arb(v[0])] for v in y])).tolist()
        recursive = [[b] for b in theory_interval.class_transform(
            p, q, n, [arb(v[0]) for v in y])]
        transposed = (matrix_.transpose() * arb_mat([[arb(v[0])] for v in y])).tolist()
    assert _encloses(product, exact) and _encloses(recursive, exact)
    assert n == 1 or not _encloses(transposed, exact)


def test_orbit_transform_by_matrices_equals_it_fiber_by_fiber(monkeypatch):
    """orbit_transform on three classes and four columns, by class matrices and (with
    MATRIX_PARTIES below every class) fiber by fiber: both contain the exact transform
    (the exact checker's factors.transform); control: the levels of two classes swapped."""
    rng = random.Random(7)
    sizes, lambdas = (1, 5, 3), (Fraction(3), Fraction(5, 2), Fraction(7, 4))
    count = 2 * 6 * 4
    columns = [[rng.randint(0, 50) for _ in range(count)] for _ in range(4)]
    exact_axes = [factors.ClassOrbits(n, lam) for n, lam in zip(sizes, lambdas, strict=True)]
    scale = core.scale_of(exact_axes)
    exact = [[Fraction(v, scale) for v in factors.transform(exact_axes, col)]
             for col in columns]
    balls = [[arb(v) for v in col] for col in columns]
    by_matrix = theory_interval.orbit_transform(sizes, lambdas, balls)
    monkeypatch.setattr(theory_interval, "MATRIX_PARTIES", -1)
    by_fiber = theory_interval.orbit_transform(sizes, lambdas, balls)
    swapped = theory_interval.orbit_transform(sizes, (lambdas[0], lambdas[2], lambdas[1]),
                                              balls)
    assert _encloses(by_matrix, exact) and _encloses(by_fiber, exact)
    assert not _encloses(swapped, exact)


def _party_case(rng: random.Random, sizes: tuple[int, ...], own: int, m: int):
    grid = core.class_grid(sizes, own)
    count = len(grid.mass)
    gain = [[ball(Fraction(rng.randint(1, 1000), 1000)) for _ in range(m)] for _ in range(count)]
    prior = [ball(Fraction(rng.randint(1, 9), 9 * count)) for _ in range(count)]
    lambdas = [Fraction(rng.randint(11, 30), rng.randint(2, 10)) for _ in sizes]
    return grid, [BallClass(n, lam) for n, lam in zip(sizes, lambdas, strict=True)], prior, gain


def _full_bound(grid, axes, prior, gain):
    """sum_s sum_b max_y M (prior g_y 1_part b) at s: every part's full column."""
    total = arb(0)
    for b in range(grid.parts):
        mixed = [factors.transform(axes, [p * row[y] if part == b else arb(0) for p, row, part
                                          in zip(prior, gain, grid.part, strict=True)])
                 for y in range(len(gain[0]))]
        total += sum((best(column) for column in zip(*mixed, strict=True)), arb(0))
    return total


def test_a_partys_scores_on_its_own_bit_are_those_of_the_full_transform():
    """The checker's label_scores on own bit b only (the own class's factor summed) give
    the bound of the full transform of every part's zero-padded column, wherever the own
    class is; control: the restriction applied to another class of one party."""
    rng = random.Random(11)
    for sizes, own, other in (((1, 4, 3, 1), 0, 3), ((3, 1, 1, 2), 1, 2), ((2, 1), 1, None)):
        grid, axes, prior, gain = _party_case(rng, sizes, own, 3)
        full = _full_bound(grid, axes, prior, gain)
        parts = core.best_scores(label_scores(grid, axes, prior, gain, own), best)
        restricted = sum((v for part in parts for v in part), arb(0))
        assert restricted.overlaps(full) and restricted.rad() < full.mid() * 2.0 ** -80
        if other is not None:
            parts = core.best_scores(label_scores(grid, axes, prior, gain, other), best)
            assert not sum((v for part in parts for v in part), arb(0)).overlaps(full)


def test_a_partys_rule_value_on_its_own_bit_is_that_of_the_full_transform():
    """The checker's rule_value spreads the rule of own bit b to the input orbits of own
    bit b only: the same minimum as the full spread read there; control: another class."""
    rng = random.Random(12)
    sizes, own, m = (1, 3, 1, 2), 0, 3
    grid, axes, _, gain = _party_case(rng, sizes, own, m)
    count = len(grid.mass)
    rules = []
    for _ in range(2):
        rows = [[Fraction(rng.randint(0, 3)) for _ in range(m)] for _ in range(count)]
        rules.append([[v / sum(r) for v in r] if sum(r) else [Fraction(1), 0, 0] for r in rows])
    acc = [arb(0)] * count
    for b, rule in enumerate(rules):
        spread = [factors.transform(axes, [ball(Fraction(rule[j][y])) * grid.mass[j]
                                           for j in range(count)]) for y in range(m)]
        for w in range(count):
            if grid.part[w] == b:
                acc[w] = sum((gain[w][y] * spread[y][w] for y in range(m)), arb(0)) / grid.mass[w]
    full = min(acc, key=lambda a: a.mid())
    rules = [[[Fraction(v) for v in row] for row in rule] for rule in rules]
    assert rule_value(grid, axes, rules, gain, own).overlaps(full)
    assert not rule_value(grid, axes, rules, gain, 2).overlaps(full)


def test_the_constructions_party_scores_and_accuracies_on_its_own_bit():
    """The construction's _scores for a party (the other classes' corner orbits, summed
    over the own corner bit) and rule_accuracies (the rule of each own bit on its own
    input orbits) against the full transforms of theory/interval.py, the own class in the
    middle; control: the own class's level changed in the full transform."""
    rng = random.Random(13)
    sizes, own, m = (3, 1, 2), 1, 2
    classes = ((1, 2, 3), (4,), (5, 6))
    count = 4 * 2 * 3
    gain = tuple(tuple(Fraction(rng.randint(0, 4)) for _ in range(m)) for _ in range(count))
    gain = tuple(row if w else (Fraction(0), Fraction(4)) for w, row in enumerate(gain))
    problem = OrbitProblem(classes, (Fraction(0), Fraction(1)), gain, own)
    lambdas = (Fraction(5, 2), Fraction(3), Fraction(7, 4))
    bits = problem.own_bits()
    with theory_interval.precision(theory_interval.PRECISION):
        units = [[ball(v) for v in row] for row in problem.units.exact]
        masses = [ball(Fraction(rng.randint(1, 5), 5 * count)) for _ in range(count)]
        scores = _scores(problem, lambdas, _unit_balls(problem), masses)
        for b in (0, 1):
            columns = [[masses[w] * units[w][y] if bits[w] == b else arb(0)
                        for w in range(count)] for y in range(m)]
            full = theory_interval.orbit_transform(sizes, lambdas, columns)
            for y in range(m):
                folded = [full[y][j] + full[y][j2] for j, j2 in zip(
                    [j for j in range(count) if bits[j] == 0],
                    [j for j in range(count) if bits[j] == 1], strict=True)]
                assert all(a.overlaps(c) for a, c in zip(scores[b][y], folded, strict=True))
        rule = tuple(rng.choice([(Fraction(1, 3), Fraction(2, 3)), (Fraction(1), Fraction(0))])
                     for _ in range(count))
        decision = (rule, rule[::-1])
        got = rule_accuracies(problem, lambdas, decision)
        sizes_w = problem.space(lambdas).orbit_sizes()
        for changed, ok in ((lambdas, True), ((lambdas[0], Fraction(5), lambdas[2]), False)):
            want = [Fraction(0)] * count
            for b, half in enumerate(decision):
                columns = [[ball(half[j][y]) * sizes_w[j] for j in range(count)]
                           for y in range(m)]
                spread = theory_interval.orbit_transform(sizes, changed, columns)
                for w in range(count):
                    if bits[w] == b:
                        acc = sum((ball(problem.units.exact[w][y]) * spread[y][w]
                                   for y in range(m)), arb(0)) / sizes_w[w]
                        want[w] = theory_interval.lower_of(acc)
            close = all(abs(a - c) < Fraction(1, 2 ** 60) for a, c in zip(got, want, strict=True))
            assert close is ok


def test_a_repeated_string_is_read_once_and_checked_as_every_entry():
    """fields.matrix reads a repeated string once: the same values; a bool after an equal
    int, or a bad entry, is still refused, naming its first place (controls)."""
    rows = matrix([["1/2", "1/2", 0], ["0", "1", 0], ["1/2", "1/2", 0]], 3, 3, "d")
    assert rows == [[Fraction(1, 2)] * 2 + [0], [0, 1, 0], [Fraction(1, 2)] * 2 + [0]]
    with pytest.raises(CertificateFormatError, match=r"`d\[0\]\[2\]`"):
        matrix([["1", 1, True]], 1, 3, "d")
    with pytest.raises(CertificateFormatError, match=r"`d\[0\]\[1\]`"):
        matrix([["1", "x"], ["x", "1"]], 2, 2, "d")


def test_a_rules_rows_are_checked_with_their_zeros_skipped():
    """read_rules skips a row's zeros: a distribution passes; a negative entry (the row
    still summing to 1) and a row summing to 2 are refused (controls)."""
    ok = read_rules({"decision": [["0", "1", "0"], ["1/2", "0", "1/2"]]}, 1, 2, 3)
    assert ok == [[[0, 1, 0], [Fraction(1, 2), 0, Fraction(1, 2)]]]
    for bad in (["-1", "2", "0"], ["1", "1", "0"]):
        with pytest.raises(CheckFailed, match="not a distribution"):
            read_rules({"decision": [["0", "1", "0"], bad]}, 1, 2, 3)


def test_a_repeated_row_object_is_written_once_as_separate_lists():
    """nested_strings converts a row object met again once, but no two lists of the JSON
    are one object (a corruption of one row stays one row's)."""
    row = (Fraction(1), Fraction(0))
    out = nested_strings(((row, row, (Fraction(1, 2), Fraction(1, 2))), (row,)))
    assert out == [[["1", "0"], ["1", "0"], ["1/2", "1/2"]], [["1", "0"]]]
    assert out[0][0] is not out[0][1] and out[0][0] is not out[1][0]
