"""The independent checker of dpverify certificates (docs/theory.md, "Certificates";
docs/format.md, the certificate format).

Short on purpose, so that a reviewer can audit it: it imports only the standard library,
`dpverify.spec` (to load the problem and recompute the gain table) and python-flint's `arb`
(rigorous interval arithmetic for e^eps), and none of the solver or construction code.

A certificate for agent A, accuracy acc, proves  value <= OPT <= bound, where OPT is the
best accuracy of any interactive protocol that is DP at the spec's lambdas:

* upper (KOV 2015, proof of Thm 3.1; theory.md): for every corner s and label l,
      sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x] gain(x, l)                       (C)
  with T_s = c_{s_1} (x) ... (x) c_{s_k}, c_0 = (lam, 1) / (1 + lam), c_1 = (1, lam) / (1 + lam),
  lam = upper.lambdas >= the spec's lambdas (the DP cone only grows); prior a distribution
  (uniform for the average). Then bound = sum(mu).
* lower: randomized response at lower.lambdas <= the spec's lambdas (so it is DP) with the
  certificate's decision rule; value is its exact accuracy, recomputed here.

Exactness: (C) is multiplied by prod_i q_i (1 + lam_i) > 0 (lam_i = p_i / q_i) and by a
common denominator D > 0 of mu, prior*gain, so that it becomes an integer inequality
    sum_x W_s[x] MU[x] >= sum_x W_s[x] R_l[x],   W_s[x] = prod_i (p_i if x_i == s_i else q_i)
and sum_x W_s[x] v[x] for all s at once is (x)_i [[p_i, q_i], [q_i, p_i]] applied to v.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx, fmpq

from dpverify.spec.numbers import unlimited_int_digits
from dpverify.spec.tables import tabulate

FORMAT = "dpverify-certificate/1"
ORBIT_FORMAT = "dpverify-orbit-certificate/1"
MARY_FORMAT = "dpverify-mary-certificate/1"
STATUSES = ("proved-optimal", "bracket")
_RATIONAL = re.compile(r"-?[0-9]+(/[0-9]+)?")


class CertificateFormatError(ValueError):
    """The certificate is not in the format at all (not a failed proof: bad input)."""


class _Fail(Exception):
    """A check failed; the message says which."""


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    message: str
    value: Fraction | None = None  # the proved optimum (status proved-optimal)
    bracket: tuple[Fraction, Fraction] | None = None  # (value, bound)


def check_certificate(spec, cert: dict) -> CheckResult:
    """Check `cert` against `spec` exactly. Raises CertificateFormatError when malformed."""
    with unlimited_int_digits():  # exact rationals may exceed the 4300-digit default
        try:
            if isinstance(cert, dict) and cert.get("format") == ORBIT_FORMAT:
                from dpverify.orbit_checker import check_orbit  # certificates on orbits

                return check_orbit(spec, cert)
            if isinstance(cert, dict) and cert.get("format") == MARY_FORMAT:
                from dpverify.mary_checker import check_mary  # more than two symbols

                return check_mary(spec, cert)
            return _check(spec, cert)
        except _Fail as exc:
            return CheckResult(False, str(exc))


# ------------------------------------------------------------------ parsing


def _get(obj, key, kind, where):
    if not isinstance(obj, dict) or key not in obj:
        raise CertificateFormatError(f"missing `{where}{key}`")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CertificateFormatError(f"`{where}{key}` has the wrong type")
    return value


def _q(value, where: str) -> Fraction:
    """An exact rational: a string "p/q" or "p" (an int is accepted too)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str) or not _RATIONAL.fullmatch(value):
        raise CertificateFormatError(f"`{where}` = {value!r} is not an exact rational 'p/q'")
    try:
        return Fraction(value)
    except (ValueError, ZeroDivisionError) as exc:  # denominator 0, or too many digits
        raise CertificateFormatError(f"`{where}`: {exc}") from None


def _vector(obj, key, length, where) -> list[Fraction]:
    items = _get(obj, key, list, where)
    if len(items) != length:
        raise CertificateFormatError(f"`{where}{key}` has {len(items)} entries, not {length}")
    return [_q(v, f"{where}{key}[{i}]") for i, v in enumerate(items)]


def _matrix(items, rows, cols, where) -> list[list[Fraction]]:
    if not isinstance(items, list) or len(items) != rows:
        raise CertificateFormatError(f"`{where}` needs {rows} rows")
    out = []
    for r, row in enumerate(items):
        if not isinstance(row, list) or len(row) != cols:
            raise CertificateFormatError(f"`{where}[{r}]` needs {cols} entries")
        out.append([_q(v, f"{where}[{r}][{c}]") for c, v in enumerate(row)])
    return out


# ------------------------------------------------------------------ arithmetic


def _corner_sums(pq: list[tuple[int, int]], v: list[int]) -> list[int]:
    """out[s] = sum_x prod_i (p_i if x_i == s_i else q_i) * v[x], by k passes of 2x2 mixing.

    Input order is big-endian (x_1 is the most significant bit), as in every dpverify table.
    """
    v = list(v)
    k = len(pq)
    for i, (p, q) in enumerate(pq):
        step = 1 << (k - 1 - i)  # the bit of party i + 1
        for base in range(0, len(v), 2 * step):
            for j in range(base, base + step):
                a, b = v[j], v[j + step]
                v[j], v[j + step] = p * a + q * b, q * a + p * b
    return v


def _common(values: list[Fraction]) -> tuple[list[int], int]:
    """Numerators over one common denominator."""
    den = math.lcm(*(v.denominator for v in values))
    return [v.numerator * (den // v.denominator) for v in values], den


def _compare_exp(r: Fraction, eps: Fraction) -> int | None:
    """The sign of r - e^eps, decided rigorously: arb balls (certified enclosures) of growing
    precision; None if still undecided at 4096 bits (e^eps is irrational for eps != 0)."""
    if eps == 0:
        return (r > 1) - (r < 1)
    old = ctx.prec
    try:
        for prec in (128, 512, 4096):
            ctx.prec = prec
            e = arb(fmpq(eps.numerator, eps.denominator)).exp()
            a = arb(fmpq(r.numerator, r.denominator))
            if a < e:  # arb comparisons are True only when certain
                return -1
            if a > e:
                return 1
        return None
    finally:
        ctx.prec = old


def _show(x: Fraction) -> str:
    """Exact when short, else a float (the exact value is in the certificate)."""
    text = str(x)
    return text if len(text) <= 40 else f"~{float(x):.17g}"


# ------------------------------------------------------------------ the check


def _check(spec, cert: dict) -> CheckResult:
    """The steps, in order; each raises _Fail (or CertificateFormatError) on the first
    problem it finds."""
    agent, accuracy, status, upper, lower = _header(spec, cert)
    outputs, gain = _gain_table(spec, cert, agent)
    up, lo = _lambdas(spec, upper, lower)
    bound = _upper_bound(spec, agent, accuracy, upper, up, outputs, gain)
    value = _lower_bound(spec, agent, accuracy, lower, lo, gain)
    return _status(spec, status, value, bound, up, lo)


def _header(spec, cert: dict, fmt: str = FORMAT):
    """The format, and the problem, agent and accuracy the certificate is about."""
    if not isinstance(cert, dict):
        raise CertificateFormatError("a certificate is a JSON object")
    if cert.get("format") != fmt:
        raise CertificateFormatError(f"`format` must be {fmt!r}")
    problem = _get(cert, "problem", str, "")
    if problem != spec.name:
        raise _Fail(f"the certificate is for problem {problem!r}, the spec is {spec.name!r}")
    if fmt == FORMAT and any(m != 2 for m in getattr(spec, "alphabets", ())):
        raise _Fail(f"{FORMAT} is for bits; this problem has more symbols ({MARY_FORMAT})")
    agent_name = _get(cert, "agent", str, "")
    agents = {a.name: a for a in spec.agents}
    if agent_name not in agents:
        raise _Fail(f"no agent {agent_name!r} in the spec (agents: {', '.join(agents)})")
    accuracy = _get(cert, "accuracy", str, "")
    if accuracy not in ("average", "worst"):
        raise CertificateFormatError("`accuracy` must be 'average' or 'worst'")
    status = _get(cert, "status", str, "")
    return (agents[agent_name], accuracy, status, _get(cert, "upper", dict, ""),
            _get(cert, "lower", dict, ""))


def _gain_table(spec, cert: dict, agent) -> tuple[list[Fraction], list[list[Fraction]]]:
    """The certificate's outputs and gain table must be the spec's, recomputed here."""
    k, n = spec.parties, 1 << spec.parties
    table = tabulate(spec, agent)
    m = len(table.outputs)
    outputs = [_q(y, f"outputs[{j}]") for j, y in enumerate(_get(cert, "outputs", list, ""))]
    if outputs != list(table.outputs):
        raise _Fail(f"outputs {[str(y) for y in outputs]} differ from the spec's "
                    f"{[str(y) for y in table.outputs]}")
    gain = _matrix(_get(cert, "gain", list, ""), n, m, "gain")
    for x in range(n):
        for j in range(m):
            if gain[x][j] != table.gain_exact[x][j]:
                raise _Fail(f"gain[{x}][{j}] = {gain[x][j]} but the spec gives "
                            f"{table.gain_exact[x][j]} (input {x:0{k}b}, output {outputs[j]})")
    return outputs, gain


def _lambdas(spec, upper: dict, lower: dict) -> tuple[list[Fraction], list[Fraction]]:
    """upper.lambdas >= the spec's lambdas (the DP cone only grows, so the bound holds) and
    1 <= lower.lambdas <= the spec's (RR at them is DP): exactly the spec's when they are
    rational, else a rigorous bracket of e^eps, decided with arb intervals."""
    k = spec.parties
    up = _vector(upper, "lambdas", k, "upper.")
    lo = _vector(lower, "lambdas", k, "lower.")
    for i in range(k):
        if lo[i] < 1:
            raise _Fail(f"lower.lambdas[{i}] = {lo[i]} is below 1")
        if spec.lambdas_exact is not None:
            if up[i] != spec.lambdas_exact[i] or lo[i] != spec.lambdas_exact[i]:
                raise _Fail(f"lambdas[{i}]: upper {up[i]}, lower {lo[i]}, but the spec's "
                            f"lambda is {spec.lambdas_exact[i]}")
            continue
        eps = spec.epsilons_exact[i]
        if _compare_exp(lo[i], eps) not in (-1, 0):
            raise _Fail(f"lower.lambdas[{i}] = {_show(lo[i])} is not <= e^{eps} "
                        f"(epsilon of party {i + 1}): outside the bracket")
        if _compare_exp(up[i], eps) not in (0, 1):
            raise _Fail(f"upper.lambdas[{i}] = {_show(up[i])} is not >= e^{eps} "
                        f"(epsilon of party {i + 1}): outside the bracket")
    return up, lo


def _upper_bound(spec, agent, accuracy: str, upper: dict, up: list[Fraction],
                 outputs: list[Fraction], gain: list[list[Fraction]]) -> Fraction:
    """prior a distribution (uniform for the average), bound = sum(mu), and for every
    corner s and label l the inequality (C): sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x]
    gain(x, l). For a party, gain(x, (y0, y1)) = w(f(x), y_{x_i}), so the right-hand side
    of (y0, y1) is that of y0 over {x_i = 0} plus that of y1 over {x_i = 1}."""
    k, n, m = spec.parties, 1 << spec.parties, len(outputs)
    prior, mu, bound = prior_mu_bound(upper, n, accuracy)
    parts = _label_parts(k, agent.party)
    pq = [(v.numerator, v.denominator) for v in up]
    flat = list(mu)
    for part in parts:
        for y in range(m):
            vec = [Fraction(0)] * n
            for x in part:
                vec[x] = prior[x] * gain[x][y]
            flat.extend(vec)
    ints, den = _common(flat)
    lhs = _corner_sums(pq, ints[:n])
    # rhs[p][y][s]: sum_x W_s[x] prior[x] gain(x, y) over part p, numerators over den
    rhs = [[_corner_sums(pq, ints[n * (1 + p * m + y):n * (2 + p * m + y)]) for y in range(m)]
           for p in range(len(parts))]
    labels = [(j,) for j in range(m)] if agent.party == 0 else \
        [(a, b) for a in range(m) for b in range(m)]
    for label in labels:
        for s in range(n):
            right = sum(rhs[p][y][s] for p, y in enumerate(label))
            if lhs[s] < right:
                scale = den * math.prod(p + q for p, q in pq)
                name = ", ".join(str(outputs[y]) for y in label)
                raise _Fail(f"corner inequality fails at corner s = {s:0{k}b}, label ({name}): "
                            f"sum_x T_s mu = {_show(Fraction(lhs[s], scale))} < "
                            f"sum_x T_s prior gain = {_show(Fraction(right, scale))}")
    return bound


def prior_mu_bound(upper: dict, n: int, accuracy: str
                   ) -> tuple[list[Fraction], list[Fraction], Fraction]:
    """upper.prior (a distribution on the n inputs, uniform for the average), upper.mu and
    upper.bound = sum(mu)."""
    prior = _vector(upper, "prior", n, "upper.")
    mu = _vector(upper, "mu", n, "upper.")
    bound = _q(_get(upper, "bound", (str, int), "upper."), "upper.bound")
    if any(p < 0 for p in prior) or sum(prior) != 1:
        raise _Fail("upper.prior is not a distribution (entries >= 0 summing to 1)")
    if accuracy == "average" and any(p != Fraction(1, n) for p in prior):
        raise _Fail(f"upper.prior must be uniform (1/{n}) for the average accuracy")
    total_mu = sum(mu, Fraction(0))
    if total_mu != bound:
        raise _Fail(f"upper.bound = {_show(bound)} but sum(mu) = {_show(total_mu)}")
    return prior, mu, bound


def _label_parts(k: int, party: int) -> list[list[int]]:
    """The inputs each part of a label ranges over: all of them for the observer; those
    with own bit 0, then 1, for party i."""
    n = 1 << k
    if party == 0:
        return [list(range(n))]
    own = [(x >> (k - party)) & 1 for x in range(n)]
    return [[x for x in range(n) if own[x] == b] for b in (0, 1)]


def _lower_bound(spec, agent, accuracy: str, lower: dict, lo: list[Fraction],
                 gain: list[list[Fraction]]) -> Fraction:
    """RR at lower.lambdas with the decision rule (rows distributions), its accuracy
    recomputed here: acc[x] = sum_y gain[x][y] sum_tau P[x, tau] Q_b[tau, y] (b the party's
    own bit), then the mean (average) or the minimum (worst); it must equal lower.value."""
    k, n, m = spec.parties, 1 << spec.parties, len(gain[0])
    raw = _get(lower, "decision", list, "lower.")
    if agent.party == 0:
        rules = [_matrix(raw, n, m, "lower.decision")]
    else:
        if len(raw) != 2:
            raise CertificateFormatError("`lower.decision` of a party needs 2 halves (own bit)")
        rules = [_matrix(raw[b], n, m, f"lower.decision[{b}]") for b in (0, 1)]
    for b, rule in enumerate(rules):
        for tau, row in enumerate(rule):
            if any(q < 0 for q in row) or sum(row) != 1:
                where = f"[{b}]" if agent.party else ""
                raise _Fail(f"decision row{where}[{tau}] is not a distribution "
                            f"(entries >= 0 summing to 1): sums to {sum(row)}")
    pq_lo = [(v.numerator, v.denominator) for v in lo]
    scale_lo = math.prod(p + q for p, q in pq_lo)
    ints, den_q = _common([q for rule in rules for row in rule for q in row])
    # mixed[b][y][x] = sum_tau P[x, tau] Q_b[tau, y] (numerators over den_q * scale_lo);
    # P is symmetric, so the corner sums of a column of Q give it
    mixed = [[_corner_sums(pq_lo, [ints[(b * n + tau) * m + y] for tau in range(n)])
              for y in range(m)] for b in range(len(rules))]
    acc: list[Fraction] = []
    for x in range(n):
        b = 0 if agent.party == 0 else (x >> (k - agent.party)) & 1
        total = sum((gain[x][y] * mixed[b][y][x] for y in range(m)), Fraction(0))
        acc.append(total / (den_q * scale_lo))
    value = min(acc) if accuracy == "worst" else sum(acc, Fraction(0)) / n
    declared = _q(_get(lower, "value", (str, int), "lower."), "lower.value")
    if declared != value:
        raise _Fail(f"lower.value = {_show(declared)} but the decision rule's {accuracy} "
                    f"accuracy under randomized response is {_show(value)}")
    return value


def _status(spec, status: str, value: Fraction, bound: Fraction, up: list[Fraction],
            lo: list[Fraction]) -> CheckResult:
    """value <= bound always; `proved-optimal` needs exact lambdas and value == bound."""
    if status not in STATUSES:
        raise _Fail(f"status {status!r} proves nothing (expected one of {', '.join(STATUSES)})")
    if value > bound:
        raise _Fail(f"value {_show(value)} exceeds bound {_show(bound)}")
    if status == "proved-optimal":
        exact = spec.lambdas_exact is not None or all(e == 0 for e in spec.epsilons_exact)
        if not exact or lo != up:
            raise _Fail("status proved-optimal needs the exact lambdas (use bracket)")
        if value != bound:
            raise _Fail(f"status proved-optimal but value {_show(value)} != bound {_show(bound)}")
        return CheckResult(True, f"proved value {value}", value=value, bracket=(value, bound))
    width = bound - value
    return CheckResult(True, f"bracket [{float(value):.17g}, {float(bound):.17g}] "
                             f"width {float(width):.3g}", bracket=(value, bound))
