"""The checker of orbit certificates (`dpverify-orbit-certificate/1`; docs/theory.md 2.8,
docs/format.md), and of every certificate on classes of parties: the all-input format
(checker/bits.py) is this one with every party a class of its own.

Nothing of the construction's symmetry code is used: the classes are the certificate's,
and the agent's table on their orbits is tabulated afresh (checker/tabulation.py).
In order: 1. the classes partition the parties, each has one privacy level, a party
agent's own party is alone, and the gains are invariant inside each class; 2. the gain of
every orbit W (w_c ones in class c, mixed radix, first class most significant) is the
spec's; 3. the levels; 4. (C') of theory.md 2.8 for every corner orbit and label
(core.check_dual, one factor M_c per class at upper.lambdas, on masses); 5. RR at
lower.lambdas (the same factors) with the rule on corner orbits, its accuracy recomputed
(core.accuracy); 6. the status.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpverify.checker import claim, core
from dpverify.checker.factors import ClassOrbits
from dpverify.checker.fields import CertificateFormatError, Json, get_field, matrix, show
from dpverify.checker.tabulation import orbit_table
from dpverify.spec.model import MultipartySpec


def check_orbits(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    head = claim.read_header(spec, cert, claim.ORBIT_FORMAT)
    classes = read_classes(spec, cert, head.agent.party)
    grid = orbit_grid(classes, head.agent.party)
    gain = orbit_gains(spec, cert, head, classes, grid)
    levels = claim.read_levels(spec, head, [c[0] - 1 for c in classes], class_names(classes))

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        return f"the corner inequality fails at corner orbit {s}: {show(left)} < {show(right)}"

    return check_classes(spec, head, [len(c) for c in classes], grid, gain, levels, describe)


def read_classes(spec: MultipartySpec, cert: Json, party: int) -> list[list[int]]:
    """Step 1 without the gains."""
    classes = class_lists(cert)
    k, levels = spec.parties, spec.lambdas_exact or spec.epsilons_exact or ()
    if sorted(i for c in classes for i in c) != list(range(1, k + 1)):
        raise claim.CheckFailed(f"the classes do not partition the parties 1..{k}")
    mixed = next((c for c in classes if len({levels[i - 1] for i in c}) != 1), None)
    if mixed is not None:
        raise claim.CheckFailed(f"class {mixed[:8]}{'...' if len(mixed) > 8 else ''} mixes "
                                "privacy levels")
    if party and [party] not in classes:
        raise claim.CheckFailed(f"party {party} (the agent) must be a class of its own")
    return classes


def class_lists(cert: Json) -> list[list[int]]:
    """`classes`: non-empty lists of integers (bad input otherwise)."""
    classes = get_field(cert, "classes", list, "")
    for c in classes:
        if not isinstance(c, list) or not c or not all(type(i) is int for i in c):
            raise CertificateFormatError("`classes` must be lists of party indices")
    return classes


def orbit_grid(classes: list[list[int]], party: int) -> core.Grid:
    return core.class_grid([len(c) for c in classes],
                           classes.index([party]) if party else None)


def class_names(classes: list[list[int]]) -> list[str]:
    return [f"class {c} (party {cls[0]}, ...)" for c, cls in enumerate(classes)]


def orbit_gains(spec: MultipartySpec, cert: Json, head: claim.Header,
                classes: list[list[int]], grid: core.Grid) -> core.Gains:
    """Step 2: the outputs and the gain of every orbit must be the spec's."""
    orbits = grid.points()
    outputs, rows = orbit_table(spec, head.agent, classes, orbits)
    claim.read_outputs(cert, outputs)
    gain = matrix(get_field(cert, "gain", list, ""), len(orbits), len(outputs), "gain")
    for w, (row, mine) in enumerate(zip(gain, rows, strict=True)):
        if row != mine:
            raise claim.CheckFailed(
                f"the gain table differs from the spec's at orbit {w} (ones per class "
                f"{list(orbits[w])[:8]}): {[show(v) for v in row]} but the spec gives "
                f"{[show(v) for v in mine]}")
    return tuple(tuple(row) for row in gain)


def check_classes(spec: MultipartySpec, head: claim.Header, sizes: Sequence[int],
                  grid: core.Grid, gain: core.Gains,
                  levels: tuple[list[Fraction], list[Fraction]], describe: core.Describe
                  ) -> claim.CheckResult:
    """Steps 4-6 on classes of `sizes` parties."""
    up, lo = levels
    prior, mu, bound = claim.read_bound(head.upper, grid.mass, head.accuracy)
    rays = tuple(ClassOrbits(n, u) for n, u in zip(sizes, up, strict=True))
    mu_masses = tuple(u * s for u, s in zip(mu, grid.mass, strict=True))
    core.check_dual(core.Dual(grid, rays, tuple(prior), gain, (core.Term(rays, mu_masses),)),
                    describe)
    rules = claim.read_rules(head.lower, grid.parts, len(grid.mass), len(gain[0]))
    rr = tuple(ClassOrbits(n, v) for n, v in zip(sizes, lo, strict=True))
    value = core.accuracy(core.Protocol(grid, rr, grid.mass, tuple(rules), gain), head.accuracy)
    claim.declared_value(head.lower, value, f"the decision rule's {head.accuracy} accuracy "
                                            "under randomized response")
    return claim.final_status(spec, head.status, value, bound, up, lo)
