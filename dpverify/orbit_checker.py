"""The independent checker of orbit certificates (`dpverify-orbit-certificate/1`;
docs/theory.md, "Symmetry"; docs/format.md).

Like dpverify/checker.py it imports no solver and no construction code: only the standard
library, python-flint, the spec layer (to load the problem and recompute the gains) and
the checker's own parsing helpers. An orbit certificate proves  value <= OPT <= bound  for
a problem whose parties fall into classes that may be permuted freely:

1. the classes partition the parties, each class has one privacy level, a party agent's
   own party is a class of its own, and the agent's gains are invariant under every
   permutation inside a class (structurally for functions of the number of ones; checked
   by transpositions on the tabulated gains otherwise);
2. the gain of every orbit is recomputed from the spec;
3. upper: prior (per input, on orbits) a distribution, uniform for the average; bound =
   sum_W |W| mu_W; and for every corner orbit J and label l (theory/orbit_certificates.py)
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

from dpverify.checker import (
    STATUSES,
    CertificateFormatError,
    CheckResult,
    _compare_exp,
    _Fail,
    _get,
    _matrix,
    _q,
    _show,
    _vector,
)
from dpverify.spec.symmetric import Symmetry, is_count_function, orbit_table

FORMAT = "dpverify-orbit-certificate/1"


def check_orbit(spec, cert: dict) -> CheckResult:
    """The steps, in order; each raises _Fail (or CertificateFormatError)."""
    agent, accuracy, status, upper, lower = _header(spec, cert)
    classes = _classes(spec, cert, agent)
    sizes = [len(c) for c in classes]
    gain, m = _gains(spec, cert, agent, classes)
    up, lo = _class_lambdas(spec, classes, upper, lower)
    own = None if agent.party == 0 else classes.index([agent.party])
    orbits = list(itertools.product(*(range(n + 1) for n in sizes)))
    mass = [math.prod(math.comb(n, w) for n, w in zip(sizes, o, strict=True)) for o in orbits]
    parts = [None] if own is None else [[o[own] == b for o in orbits] for b in (0, 1)]
    bound = _upper(spec, accuracy, upper, up, sizes, mass, gain, m, parts)
    value = _lower(spec, accuracy, lower, lo, sizes, mass, gain, m, parts, own, orbits)
    if status not in STATUSES:
        raise _Fail(f"status {status!r} proves nothing (expected one of {', '.join(STATUSES)})")
    if value > bound:
        raise _Fail(f"value {_show(value)} exceeds bound {_show(bound)}")
    if status == "proved-optimal":
        if up != lo or spec.lambdas_exact is None and any(e != 0 for e in spec.epsilons_exact):
            raise _Fail("status proved-optimal needs the exact lambdas (use bracket)")
        if value != bound:
            raise _Fail(f"status proved-optimal but value {_show(value)} != bound {_show(bound)}")
        return CheckResult(True, f"proved value {_show(value)}", value=value,
                           bracket=(value, bound))
    return CheckResult(True, f"bracket [{float(value):.17g}, {float(bound):.17g}] "
                             f"width {float(bound - value):.3g}", bracket=(value, bound))


def _header(spec, cert: dict):
    if cert.get("format") != FORMAT:
        raise CertificateFormatError(f"`format` must be {FORMAT!r}")
    if _get(cert, "problem", str, "") != spec.name:
        raise _Fail(f"the certificate is for problem {cert['problem']!r}, the spec is "
                    f"{spec.name!r}")
    agents = {a.name: a for a in spec.agents}
    name = _get(cert, "agent", str, "")
    if name not in agents:
        raise _Fail(f"no agent {name!r} in the spec (agents: {', '.join(agents)})")
    accuracy = _get(cert, "accuracy", str, "")
    if accuracy not in ("average", "worst"):
        raise CertificateFormatError("`accuracy` must be 'average' or 'worst'")
    return (agents[name], accuracy, _get(cert, "status", str, ""),
            _get(cert, "upper", dict, ""), _get(cert, "lower", dict, ""))


def _classes(spec, cert: dict, agent) -> list[list[int]]:
    """Step 1: a partition into classes of equal privacy, the agent's own party alone, and
    gains invariant under permutations inside each class."""
    raw = _get(cert, "classes", list, "")
    classes = []
    for c in raw:
        if not isinstance(c, list) or not c or not all(isinstance(i, int) for i in c):
            raise CertificateFormatError("`classes` must be lists of party indices")
        classes.append(c)
    k = spec.parties
    if sorted(i for c in classes for i in c) != list(range(1, k + 1)):
        raise _Fail(f"the classes do not partition the parties 1..{k}")
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    for c in classes:
        if len({keys[i - 1] for i in c}) != 1:
            raise _Fail(f"class {c} mixes privacy levels")
    if agent.party and [agent.party] not in classes:
        raise _Fail(f"party {agent.party} (the agent) must be a class of its own")
    _invariance(spec, agent, classes)
    return classes


def _invariance(spec, agent, classes: list[list[int]]) -> None:
    """The gains are invariant under every permutation inside a class: a function of the
    number of ones is; `bit:i` is when party i is alone; anything else is checked on the
    tabulated gains for the adjacent transpositions, which generate each class's group."""
    fn = agent.function
    if is_count_function(fn):
        return
    if fn.kind == "named" and fn.name == "bit":
        if [fn.param] not in classes:
            raise _Fail(f"bit:{fn.param} is not symmetric unless party {fn.param} is alone")
        return
    from dpverify.spec.tables import MAX_TABULATED_PARTIES, tabulate

    k = spec.parties
    if k > MAX_TABULATED_PARTIES:
        raise _Fail("the function's symmetry cannot be checked at this size")
    rows = tabulate(spec, agent).gain_exact
    for c in classes:
        for i, j in itertools.pairwise(c):
            bi, bj = k - i, k - j
            for x, row in enumerate(rows):
                if ((x >> bi) & 1) != ((x >> bj) & 1) and rows[x ^ ((1 << bi) | (1 << bj))] != row:
                    raise _Fail(f"the gains change when parties {i} and {j} swap (input "
                                f"{x:0{k}b}): they are not in one symmetry class")


def _gains(spec, cert: dict, agent, classes) -> tuple[list[list[Fraction]], int]:
    """Step 2: the outputs and the gain of every orbit, recomputed from the spec."""
    table = orbit_table(spec, agent, Symmetry(tuple(tuple(c) for c in classes), False))
    outputs = [_q(y, f"outputs[{j}]") for j, y in enumerate(_get(cert, "outputs", list, ""))]
    if outputs != list(table.outputs):
        raise _Fail("the outputs differ from the spec's")
    m = len(outputs)
    gain = _matrix(_get(cert, "gain", list, ""), len(table.gain_exact), m, "gain")
    if [list(r) for r in table.gain_exact] != gain:
        raise _Fail("the gain table differs from the spec's")
    return gain, m


def _class_lambdas(spec, classes, upper: dict, lower: dict):
    """The lambdas of every class: the spec's exactly, or a rigorous bracket of e^eps."""
    up = _vector(upper, "lambdas", len(classes), "upper.")
    lo = _vector(lower, "lambdas", len(classes), "lower.")
    for c, (u, v, cls) in enumerate(zip(up, lo, classes, strict=True)):
        first = cls[0] - 1
        if v < 1:
            raise _Fail(f"lower.lambdas[{c}] = {v} is below 1")
        if spec.lambdas_exact is not None:
            if u != spec.lambdas_exact[first] or v != spec.lambdas_exact[first]:
                raise _Fail(f"lambdas of class {c}: upper {u}, lower {v}, but the spec's "
                            f"lambda is {spec.lambdas_exact[first]}")
            continue
        eps = spec.epsilons_exact[first]
        if _compare_exp(v, eps) not in (-1, 0) or _compare_exp(u, eps) not in (0, 1):
            raise _Fail(f"the lambdas of class {c} do not bracket e^{eps}")
    return up, lo


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
    count = len(mass)
    prior = _vector(upper, "prior", count, "upper.")
    mu = _vector(upper, "mu", count, "upper.")
    bound = _q(_get(upper, "bound", (str, int), "upper."), "upper.bound")
    if any(p < 0 for p in prior) or sum(p * s for p, s in zip(prior, mass, strict=True)) != 1:
        raise _Fail("upper.prior is not a distribution over the inputs")
    if accuracy == "average" and any(p != Fraction(1, 2 ** spec.parties) for p in prior):
        raise _Fail("upper.prior must be uniform for the average accuracy")
    if sum(u * s for u, s in zip(mu, mass, strict=True)) != bound:
        raise _Fail(f"upper.bound = {_show(bound)} but sum_W |W| mu_W differs")
    rows = [[u * s for u, s in zip(mu, mass, strict=True)]]
    for part in parts:
        for y in range(m):
            rows.append([p * s * g[y] if part is None or part[w] else Fraction(0)
                         for w, (p, s, g) in enumerate(zip(prior, mass, gain, strict=True))])
    den = math.lcm(*(v.denominator for row in rows for v in row))
    sums = []
    for row in rows:
        total, scale = _transform(sizes, up, [int(v * den) for v in row])
        sums.append(total)
    lhs, rhs = sums[0], sums[1:]
    for J in range(count):
        best = sum(max(rhs[b * m + y][J] for y in range(m)) for b in range(len(parts)))
        if lhs[J] < best:
            raise _Fail(f"the corner inequality fails at corner orbit {J}: "
                        f"{_show(Fraction(lhs[J], den * scale))} < "
                        f"{_show(Fraction(best, den * scale))}")
    return bound


def _lower(spec, accuracy, lower, lo, sizes, mass, gain, m, parts, own, orbits) -> Fraction:
    count = len(mass)
    raw = _get(lower, "decision", list, "lower.")
    rules = [_matrix(raw, count, m, "lower.decision")] if own is None else \
        [_matrix(raw[b], count, m, f"lower.decision[{b}]") for b in (0, 1)]
    for rule in rules:
        for J, row in enumerate(rule):
            if any(v < 0 for v in row) or sum(row) != 1:
                raise _Fail(f"decision row {J} is not a distribution")
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
        sum(a * s for a, s in zip(acc, mass, strict=True)) / 2 ** spec.parties
    declared = _q(_get(lower, "value", (str, int), "lower."), "lower.value")
    if declared != value:
        raise _Fail(f"lower.value = {_show(declared)} but the rule's {accuracy} accuracy "
                    f"under randomized response is {_show(value)}")
    return value
