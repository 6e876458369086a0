"""The checker of orbit certificates (`dpverify-orbit-certificate/1`; docs/theory.md 2.8;
docs/format.md), and of every certificate on classes of parties: the all-input format
(checker/bits.py) is this one with classes of one party.

An orbit certificate proves  value <= OPT <= bound  for a problem whose parties fall into
classes that may be permuted freely. Nothing of the construction's symmetry code is used:
the classes are the certificate's, checked here, and the agent's table on orbits is
tabulated here, afresh for every certificate (checker/tabulation.py):

1. the classes partition the parties, each class has one privacy level, a party agent's
   own party is a class of its own, and the agent's gains are invariant inside each class;
2. the gain of every orbit W (w_c ones in class c, mixed radix, first class most
   significant) is the spec's;
3. upper: (C') of theory.md 2.8 for every corner orbit J and label, by checker/core.py with
   one factor per class, M_c at upper.lambdas (checker/factors.py, ClassOrbits), on masses;
4. lower: RR at lower.lambdas (the same factors) with the rule on corner orbits, its
   accuracy recomputed; 5. the status.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpverify.checker.claim import (
    ORBIT_FORMAT,
    CheckFailed,
    CheckResult,
    Header,
    declared_value,
    final_status,
    read_bound,
    read_header,
    read_levels,
    read_outputs,
    read_rules,
)
from dpverify.checker.core import (
    Describe,
    Dual,
    Grid,
    Protocol,
    Term,
    accuracy,
    check_dual,
    class_grid,
)
from dpverify.checker.factors import ClassOrbits
from dpverify.checker.fields import CertificateFormatError, Json, get_field, matrix, show
from dpverify.checker.tabulation import orbit_table
from dpverify.spec.model import MultipartySpec

Gains = tuple[tuple[Fraction, ...], ...]


def check_orbits(spec: MultipartySpec, cert: Json) -> CheckResult:
    """The steps of the module docstring, in order; each raises CheckFailed (or
    CertificateFormatError) on the first problem it finds."""
    head = read_header(spec, cert, ORBIT_FORMAT)
    classes = read_classes(spec, cert, head.agent.party)
    grid = orbit_grid(classes, head.agent.party)
    gain = orbit_gains(spec, cert, head, classes, grid)
    up, lo = read_levels(spec, head, [c[0] - 1 for c in classes], class_names(classes))

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        return f"the corner inequality fails at corner orbit {s}: {show(left)} < {show(right)}"

    return check_classes(spec, head, [len(c) for c in classes], grid, gain, (up, lo),
                         describe)


def read_classes(spec: MultipartySpec, cert: Json, party: int) -> list[list[int]]:
    """Step 1 without the gains: a partition into classes of equal privacy, the agent's own
    party alone."""
    classes = []
    for c in get_field(cert, "classes", list, ""):
        if not isinstance(c, list) or not c or \
                not all(isinstance(i, int) and not isinstance(i, bool) for i in c):
            raise CertificateFormatError("`classes` must be lists of party indices")
        classes.append(c)
    k = spec.parties
    if sorted(i for c in classes for i in c) != list(range(1, k + 1)):
        raise CheckFailed(f"the classes do not partition the parties 1..{k}")
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    for c in classes:
        if len({(keys or ())[i - 1] for i in c}) != 1:
            raise CheckFailed(f"class {c[:8]}{'...' if len(c) > 8 else ''} mixes privacy "
                              "levels")
    if party and [party] not in classes:
        raise CheckFailed(f"party {party} (the agent) must be a class of its own")
    return classes


def orbit_grid(classes: list[list[int]], party: int) -> Grid:
    return class_grid([len(c) for c in classes], classes.index([party]) if party else None)


def class_names(classes: list[list[int]]) -> list[str]:
    return [f"class {c} (party {cls[0]}, ...)" for c, cls in enumerate(classes)]


def orbit_gains(spec: MultipartySpec, cert: Json, head: Header, classes: list[list[int]],
                grid: Grid) -> Gains:
    """Step 2: the outputs and gains of every orbit, tabulated here (with the invariance
    of step 1), must be the certificate's."""
    orbits = grid.points()
    outputs, rows = orbit_table(spec, head.agent, classes, orbits)
    read_outputs(cert, outputs)
    gain = matrix(get_field(cert, "gain", list, ""), len(orbits), len(outputs), "gain")
    for w, (row, mine) in enumerate(zip(gain, rows, strict=True)):
        if row != mine:
            raise CheckFailed(f"the gain table differs from the spec's at orbit {w} (ones "
                              f"per class {list(orbits[w])[:8]}): {[show(v) for v in row]} "
                              f"but the spec gives {[show(v) for v in mine]}")
    return tuple(tuple(row) for row in gain)


def check_classes(spec: MultipartySpec, head: Header, sizes: Sequence[int], grid: Grid,
                  gain: Gains, levels: tuple[list[Fraction], list[Fraction]],
                  describe: Describe) -> CheckResult:
    """Steps 3-5 on classes of `sizes` parties: the dual's inequalities with one factor
    M_c per class at upper.lambdas, RR's accuracy at lower.lambdas, the status."""
    up, lo = levels
    prior, mu, bound = read_bound(head.upper, grid.mass, head.accuracy)
    rays = tuple(ClassOrbits(n, u.numerator, u.denominator) for n, u in zip(sizes, up,
                                                                            strict=True))
    mu_mass = tuple(u * s for u, s in zip(mu, grid.mass, strict=True))
    check_dual(Dual(grid, rays, tuple(prior), gain, (Term(rays, mu_mass),)), describe)
    rules = read_rules(head.lower, grid.parts, len(grid.mass), len(gain[0]))
    rr = tuple(ClassOrbits(n, v.numerator, v.denominator) for n, v in zip(sizes, lo,
                                                                          strict=True))
    value = accuracy(Protocol(grid, rr, grid.mass, tuple(rules), gain), head.accuracy)
    declared_value(head.lower, value, f"the decision rule's {head.accuracy} accuracy under "
                                      "randomized response")
    return final_status(spec, head.status, value, bound, up, lo)
