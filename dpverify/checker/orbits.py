"""The checker of orbit certificates (`dpverify-orbit-certificate/1`; docs/theory.md,
"Symmetry"; docs/format.md).

An orbit certificate proves  value <= OPT <= bound  for a problem whose parties fall into
classes that may be permuted freely. Nothing of the construction's symmetry code is used:
the classes are the certificate's, checked here, and the agent's table on orbits is
tabulated here, afresh for every certificate (the orbit numbering depends on the classes):

1. the classes partition the parties, each class has one privacy level, a party agent's
   own party is a class of its own, and the agent's gains are invariant under every
   permutation inside a class: structurally for a function of the number of ones
   (spec/counts.py, the format's count functions) and for `bit:i` with party i alone;
   otherwise (at most 20 parties) confirmed on the gains tabulated over all inputs, for
   the adjacent transpositions, which generate each class's group;
2. the gain of every orbit W (weights w_c = ones in class c, mixed radix, first class
   most significant) is recomputed: F(sum_c w_c) for a count function, w_c for `bit:i`,
   else the tabulated gain row of the orbit's first input (in each class the ones on the
   parties of smallest index);
3. upper: prior (per input, on orbits) a distribution, uniform for the average; bound =
   sum_W |W| mu_W; and for every corner orbit J and label l (theory/orbits/certificates.py)
       sum_W M[W, J] mu_W >= sum_W M[W, J] prior_W gain(W, l),
   M[W, J] = prod_c coeff of z^(w_c) in (p z + q)^(j_c) (p + q z)^(n_c - j_c) / (p + q)^(n_c),
   computed here from its definition, with the masses |J| M[W, J] = |W| M[J, W];
4. lower: randomized response at lower.lambdas with the decision rule on corner orbits, its
   accuracy recomputed; 5. the status.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from flint import fmpz_poly

from dpverify.checker.common import (
    ORBIT_FORMAT,
    CertificateFormatError,
    CheckFailed,
    CheckResult,
    check_levels,
    declared_value,
    final_status,
    get_field,
    matrix,
    prior_mu_bound,
    read_header,
    read_outputs,
    show,
    spec_gains,
    spec_values,
    vector,
)
from dpverify.spec.counts import evaluate_counts, is_count_function
from dpverify.spec.expr import ExpressionError


def check_orbits(spec, cert: dict) -> CheckResult:
    """The steps, in order; each raises CheckFailed (or CertificateFormatError)."""
    head = read_header(spec, cert, ORBIT_FORMAT)
    agent = head.agent
    classes = read_classes(spec, cert, agent.party)
    sizes = [len(c) for c in classes]
    orbits = list(itertools.product(*(range(n + 1) for n in sizes)))
    gain, m = _gains(spec, cert, agent, classes, orbits)
    up = vector(head.upper, "lambdas", len(classes), "upper.")
    lo = vector(head.lower, "lambdas", len(classes), "lower.")
    check_levels(spec, up, lo, [c[0] - 1 for c in classes],
                 [f"class {c} (party {cls[0]}, ...)" for c, cls in enumerate(classes)])
    own = None if agent.party == 0 else classes.index([agent.party])
    mass = [math.prod(math.comb(n, w) for n, w in zip(sizes, o, strict=True)) for o in orbits]
    parts = [None] if own is None else [[o[own] == b for o in orbits] for b in (0, 1)]
    bound = _upper(spec, head.accuracy, head.upper, up, sizes, mass, gain, m, parts)
    value = _lower(head.accuracy, head.lower, lo, sizes, mass, gain, m, own, orbits)
    return final_status(spec, head.status, value, bound, up, lo)


def read_classes(spec, cert: dict, party: int) -> list[list[int]]:
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
        if len({keys[i - 1] for i in c}) != 1:
            raise CheckFailed(f"class {c[:8]}{'...' if len(c) > 8 else ''} mixes privacy "
                              "levels")
    if party and [party] not in classes:
        raise CheckFailed(f"party {party} (the agent) must be a class of its own")
    return classes


def _gains(spec, cert: dict, agent, classes, orbits) -> tuple[list[list[Fraction]], int]:
    """Steps 1 and 2: the invariance, and the outputs and gains of every orbit, which must
    be the certificate's."""
    outputs, rows = orbit_table(spec, agent, classes, orbits)
    read_outputs(cert, outputs)
    m = len(outputs)
    gain = matrix(get_field(cert, "gain", list, ""), len(orbits), m, "gain")
    for w, (row, mine) in enumerate(zip(gain, rows, strict=True)):
        if row != mine:
            raise CheckFailed(f"the gain table differs from the spec's at orbit {w} (ones "
                              f"per class {list(orbits[w])[:8]}): {[show(v) for v in row]} "
                              f"but the spec gives {[show(v) for v in mine]}")
    return gain, m


def orbit_table(spec, agent, classes: list[list[int]], orbits: list[tuple[int, ...]]
                ) -> tuple[tuple[Fraction, ...], list[list]]:
    """The agent's outputs and its gain row on every orbit of `classes`, tabulated here
    (steps 1 and 2 of the module docstring)."""
    fn, k = agent.function, spec.parties
    if is_count_function(fn):
        try:
            counts = evaluate_counts(fn, k)
        except ExpressionError as exc:
            raise CheckFailed(f"the function fails: {exc}") from None
        return spec_gains(spec, agent, [counts[sum(o)] for o in orbits])
    if fn.kind == "named" and fn.name == "bit":
        if [fn.param] not in classes:
            raise CheckFailed(f"bit:{fn.param} is not symmetric unless party {fn.param} is "
                              "alone")
        where = classes.index([fn.param])
        return spec_gains(spec, agent, [Fraction(o[where]) for o in orbits])
    outputs, rows = spec_gains(spec, agent, spec_values(spec, agent))  # all 2^k inputs
    _confirm_invariance(k, rows, classes)
    return outputs, [rows[_first_input(k, classes, o)] for o in orbits]


def _confirm_invariance(k: int, rows: list[list], classes: list[list[int]]) -> None:
    """The gain rows are unchanged by the swap of every two adjacent parties of a class."""
    for c in classes:
        for i, j in itertools.pairwise(c):
            bi, bj = k - i, k - j
            for x, row in enumerate(rows):
                if ((x >> bi) & 1) != ((x >> bj) & 1) and rows[x ^ ((1 << bi) | (1 << bj))] != row:
                    raise CheckFailed(f"the gains change when parties {i} and {j} swap (input "
                                      f"{x:0{k}b}): they are not in one symmetry class")


def _first_input(k: int, classes: list[list[int]], weights: tuple[int, ...]) -> int:
    """The orbit's first input (x1 most significant): in each class the ones on the parties
    of smallest index."""
    x = 0
    for cls, w in zip(classes, weights, strict=True):
        for i in sorted(cls)[:w]:
            x |= 1 << (k - i)
    return x


def _transform(sizes, lambdas, masses: list[int]) -> tuple[list[int], int]:
    """sum_W M[W, J] y_W over orbits, class by class: the coefficients of
    sum_j y_j (p z + q)^j (p + q z)^(n - j), as integers over prod (p + q)^n."""
    values = list(masses)
    den = 1
    stride = math.prod(n + 1 for n in sizes)
    for n, lam in zip(sizes, lambdas, strict=True):
        p, q = lam.numerator, lam.denominator
        block = stride // (n + 1)
        stride = block
        out = list(values)
        for start in range(len(values)):
            if (start // block) % (n + 1) != 0:
                continue  # the fiber starts at weight 0 of this class
            fiber = [values[start + w * block] for w in range(n + 1)]
            # Horner-like: total_j = (p + q z) total_(j-1) + y_j (p z + q)^j
            total, power = fmpz_poly([fiber[0]]), fmpz_poly([1])
            for y in fiber[1:]:
                power *= fmpz_poly([q, p])
                total = total * fmpz_poly([p, q]) + y * power
            coeffs = [int(c) for c in total.coeffs()] + [0] * (n + 1)
            for w in range(n + 1):
                out[start + w * block] = coeffs[w]
        values = out
        den *= (p + q) ** n
    return values, den


def _upper(spec, accuracy, upper, up, sizes, mass, gain, m, parts) -> Fraction:
    prior, mu, bound = prior_mu_bound(upper, mass, spec.parties, accuracy)
    rows = [[u * s for u, s in zip(mu, mass, strict=True)]]
    for part in parts:
        for y in range(m):
            rows.append([p * s * g[y] if part is None or part[w] else Fraction(0)
                         for w, (p, s, g) in enumerate(zip(prior, mass, gain, strict=True))])
    den = math.lcm(*(v.denominator for row in rows for v in row))
    sums = []
    scale = 1
    for row in rows:
        total, scale = _transform(sizes, up, [int(v * den) for v in row])
        sums.append(total)
    lhs, rhs = sums[0], sums[1:]
    for J in range(len(mass)):
        best = sum(max(rhs[b * m + y][J] for y in range(m)) for b in range(len(parts)))
        if lhs[J] < best:
            raise CheckFailed(f"the corner inequality fails at corner orbit {J}: "
                              f"{show(Fraction(lhs[J], den * scale))} < "
                              f"{show(Fraction(best, den * scale))}")
    return bound


def _lower(accuracy, lower, lo, sizes, mass, gain, m, own, orbits) -> Fraction:
    count = len(mass)
    raw = get_field(lower, "decision", list, "lower.")
    if own is not None and len(raw) != 2:
        raise CertificateFormatError("`lower.decision` of a party needs 2 halves (own bit)")
    rules = [matrix(raw, count, m, "lower.decision")] if own is None else \
        [matrix(raw[b], count, m, f"lower.decision[{b}]") for b in (0, 1)]
    for rule in rules:
        for J, row in enumerate(rule):
            if any(v < 0 for v in row) or sum(row) != 1:
                raise CheckFailed(f"decision row {J} is not a distribution")
    acc = [Fraction(0)] * count
    for b, rule in enumerate(rules):
        for y in range(m):
            column = [rule[J][y] * mass[J] for J in range(count)]
            den = math.lcm(*(v.denominator for v in column))
            spread, scale = _transform(sizes, lo, [int(v * den) for v in column])
            for W in range(count):
                if own is None or orbits[W][own] == b:
                    acc[W] += gain[W][y] * Fraction(spread[W], den * scale * mass[W])
    value = min(acc) if accuracy == "worst" else \
        sum(a * s for a, s in zip(acc, mass, strict=True)) / sum(mass)
    return declared_value(lower, value, f"the rule's {accuracy} accuracy under randomized "
                                        "response")
