"""What the three certificate checkers share: the certificate's header and exact numbers,
the spec's gains tabulated afresh, the lambda brackets, and the final status rule.

Nothing here (nor anywhere in dpverify/checker/) is cached or kept between calls: every
check recomputes from the spec it is given and the certificate, so the order in which
certificates are checked cannot change an answer. Numbers are read at any length
(spec.numbers.parse_rational; Python's own int(str) stops at 4300 digits) and shown in
messages through `show`, which never converts a long integer to decimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx, fmpq

from dpverify.spec.model import AgentSpec
from dpverify.spec.numbers import parse_rational, rational_text
from dpverify.spec.tables import MAX_TABULATED_PARTIES, function_values, gain_rows, table_of

FORMAT = "dpverify-certificate/1"
ORBIT_FORMAT = "dpverify-orbit-certificate/1"
MARY_FORMAT = "dpverify-mary-certificate/1"
INTERVAL_FORMAT = "dpverify-interval-certificate/1"
ORBIT_INTERVAL_FORMAT = "dpverify-orbit-interval-certificate/1"
STATUSES = ("proved-optimal", "bracket")

# Messages show a rational exactly up to this many bits (about 40 digits), else as a float.
SHOWN_BITS = 130


class CertificateFormatError(ValueError):
    """The certificate is not in the format at all (not a failed proof: bad input)."""


class CheckFailed(Exception):
    """A check failed; the message says which."""


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    message: str
    value: Fraction | None = None  # the proved optimum (status proved-optimal)
    bracket: tuple[Fraction, Fraction] | None = None  # (value, bound)


@dataclass(frozen=True)
class Header:
    """The fields every certificate starts with, validated against the spec."""

    agent: AgentSpec
    accuracy: str
    status: str
    upper: dict
    lower: dict


# ------------------------------------------------------------------ reading


def get_field(obj, key: str, kind, where: str):
    """obj[key], of type `kind` (never a bool), or CertificateFormatError."""
    if not isinstance(obj, dict) or key not in obj:
        raise CertificateFormatError(f"missing `{where}{key}`")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CertificateFormatError(f"`{where}{key}` has the wrong type")
    return value


def rational(value, where: str) -> Fraction:
    """An exact rational: a string "p/q" or "p" of any length (an int is accepted too)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str):
        raise CertificateFormatError(f"`{where}` is a {type(value).__name__}, not an exact "
                                     "rational 'p/q'")
    try:
        return parse_rational(value)
    except ValueError:
        shown = value if len(value) <= 40 else value[:20] + "..."
        raise CertificateFormatError(f"`{where}` = {shown!r} is not an exact rational 'p/q' "
                                     "(q > 0)") from None


def vector(obj, key: str, length: int, where: str) -> list[Fraction]:
    items = get_field(obj, key, list, where)
    if len(items) != length:
        raise CertificateFormatError(f"`{where}{key}` has {len(items)} entries, not {length}")
    return [rational(v, f"{where}{key}[{i}]") for i, v in enumerate(items)]


def matrix(items, rows: int, cols: int, where: str) -> list[list[Fraction]]:
    if not isinstance(items, list) or len(items) != rows:
        raise CertificateFormatError(f"`{where}` needs {rows} rows")
    out = []
    for r, row in enumerate(items):
        if not isinstance(row, list) or len(row) != cols:
            raise CertificateFormatError(f"`{where}[{r}]` needs {cols} entries")
        out.append([rational(v, f"{where}[{r}][{c}]") for c, v in enumerate(row)])
    return out


def read_header(spec, cert, fmt: str) -> Header:
    """The format, and the problem, agent and accuracy the certificate is about."""
    if not isinstance(cert, dict):
        raise CertificateFormatError("a certificate is a JSON object")
    if cert.get("format") != fmt:
        raise CertificateFormatError(f"`format` must be {fmt!r}")
    problem = get_field(cert, "problem", str, "")
    if problem != spec.name:
        raise CheckFailed(f"the certificate is for problem {problem!r}, the spec is "
                          f"{spec.name!r}")
    if fmt != MARY_FORMAT and any(m != 2 for m in getattr(spec, "alphabets", ())):
        raise CheckFailed(f"{fmt} is for bits; this problem has more symbols ({MARY_FORMAT})")
    agent_name = get_field(cert, "agent", str, "")
    agents = {a.name: a for a in spec.agents}
    if agent_name not in agents:
        raise CheckFailed(f"no agent {agent_name!r} in the spec (agents: {', '.join(agents)})")
    accuracy = get_field(cert, "accuracy", str, "")
    if accuracy not in ("average", "worst"):
        raise CertificateFormatError("`accuracy` must be 'average' or 'worst'")
    return Header(agents[agent_name], accuracy, get_field(cert, "status", str, ""),
                  get_field(cert, "upper", dict, ""), get_field(cert, "lower", dict, ""))


def read_outputs(cert, expected) -> list[Fraction]:
    """The certificate's outputs, which must be the spec's."""
    outputs = [rational(y, f"outputs[{j}]")
               for j, y in enumerate(get_field(cert, "outputs", list, ""))]
    if outputs != list(expected):
        raise CheckFailed(f"outputs {[show(y) for y in outputs]} differ from the spec's "
                          f"{[show(y) for y in expected]}")
    return outputs


# ------------------------------------------------------------------ the spec, afresh


def spec_values(spec, agent: AgentSpec) -> tuple[Fraction, ...]:
    """f(x) on every input (input order), tabulated from the spec now (no cache)."""
    if spec.binary and spec.parties > MAX_TABULATED_PARTIES:
        raise CheckFailed(f"{spec.parties} parties: a table over all 2^{spec.parties} inputs "
                          f"is checked up to {MAX_TABULATED_PARTIES} parties")
    key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    return function_values(agent.function, spec.parties, file=spec.source, key=key,
                           alphabets=spec.alphabets)


def spec_gains(spec, agent: AgentSpec, values) -> tuple[tuple[Fraction, ...], list[list]]:
    """The outputs and the exact gain rows w(f, y) for the function values `values` (one
    per input, or one per orbit), from the spec's gain definition (no cache)."""
    table = table_of(agent, tuple(values), spec.source)
    return table.outputs, [list(row) for row in table.gain_exact]


def gains_by_value(spec, agent: AgentSpec, values) -> tuple[tuple[Fraction, ...], dict]:
    """The outputs and the exact gain row w(f, y) of every distinct function value (sorted),
    from the spec's gain definition (no cache): a gain depends on the input only through
    f(x), so a table over 2^k inputs needs only these rows."""
    distinct = tuple(sorted(set(values)))
    outputs = agent.outputs if agent.outputs is not None else distinct
    return tuple(outputs), dict(gain_rows(agent, distinct, tuple(outputs), spec.source))


# ------------------------------------------------------------------ arithmetic


def common_denominator(values: list[Fraction]) -> tuple[list[int], int]:
    """Numerators over one common denominator."""
    den = math.lcm(*(v.denominator for v in values))
    return [v.numerator * (den // v.denominator) for v in values], den


def compare_exp(r: Fraction, eps: Fraction) -> int | None:
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


def show(x: Fraction | int) -> str:
    """Exact when short, else `~` and a float (the exact value is in the certificate); never
    a decimal conversion of a long integer."""
    x = Fraction(x)
    if x.numerator.bit_length() + x.denominator.bit_length() <= SHOWN_BITS:
        return rational_text(x)
    try:
        return f"~{float(x):.17g}"
    except OverflowError:  # beyond 1e308: the decimal exponent from logarithms
        exponent = math.log10(abs(x.numerator)) - math.log10(x.denominator)
        whole = math.floor(exponent)
        return f"~{'-' if x < 0 else ''}{10 ** (exponent - whole):.6f}e+{whole}"


# ------------------------------------------------------------------ lambdas, bounds, status


def check_levels(spec, up: list[Fraction], lo: list[Fraction], first: list[int],
                 names: list[str]) -> None:
    """up[c] >= the spec's lambda of party first[c] + 1 (the DP cone only grows, so the
    bound holds) and 1 <= lo[c] <= it (RR at lo is DP): exactly the spec's when it is
    rational, else a rigorous bracket of e^eps, decided with arb intervals. `names[c]` says
    whose level entry c is, for the messages."""
    for c, (u, v, party) in enumerate(zip(up, lo, first, strict=True)):
        if v < 1:
            raise CheckFailed(f"lower.lambdas[{c}] = {show(v)} is below 1")
        if spec.lambdas_exact is not None:
            lam = spec.lambdas_exact[party]
            if u != lam or v != lam:
                raise CheckFailed(f"lambdas[{c}] of {names[c]}: upper {show(u)}, lower "
                                  f"{show(v)}, but the spec's lambda is {show(lam)}")
            continue
        eps = spec.epsilons_exact[party]
        if compare_exp(v, eps) not in (-1, 0):
            raise CheckFailed(f"lower.lambdas[{c}] = {show(v)} is not <= e^{show(eps)} "
                              f"(epsilon of {names[c]}): outside the bracket")
        if compare_exp(u, eps) not in (0, 1):
            raise CheckFailed(f"upper.lambdas[{c}] = {show(u)} is not >= e^{show(eps)} "
                              f"(epsilon of {names[c]}): outside the bracket")


def prior_mu_bound(upper: dict, mass: list[int], parties: int, accuracy: str
                   ) -> tuple[list[Fraction], list[Fraction], Fraction]:
    """upper.prior (per input, one entry per block of `mass` inputs: a distribution over
    the inputs, uniform 2^-k for the average), upper.mu and upper.bound = sum mass * mu."""
    count = len(mass)
    prior = vector(upper, "prior", count, "upper.")
    mu = vector(upper, "mu", count, "upper.")
    bound = rational(get_field(upper, "bound", (str, int), "upper."), "upper.bound")
    n = sum(mass)
    if any(p < 0 for p in prior) or sum(p * s for p, s in zip(prior, mass, strict=True)) != 1:
        raise CheckFailed("upper.prior is not a distribution (entries >= 0 summing to 1 "
                          "over the inputs)")
    if accuracy == "average" and any(p != Fraction(1, n) for p in prior):
        raise CheckFailed(f"upper.prior must be uniform (1/{n if parties <= 60 else '2^k'}) "
                          "for the average accuracy")
    total_mu = sum((u * s for u, s in zip(mu, mass, strict=True)), Fraction(0))
    if total_mu != bound:
        total = "sum(mu)" if all(s == 1 for s in mass) else "sum_W |W| mu_W"
        raise CheckFailed(f"upper.bound = {show(bound)} but {total} = {show(total_mu)}")
    return prior, mu, bound


def declared_value(lower: dict, value: Fraction, what: str) -> Fraction:
    """lower.value must be the accuracy recomputed here (`what` describes it)."""
    declared = rational(get_field(lower, "value", (str, int), "lower."), "lower.value")
    if declared != value:
        raise CheckFailed(f"lower.value = {show(declared)} but {what} is {show(value)}")
    return value


def final_status(spec, status: str, value: Fraction, bound: Fraction, up: list[Fraction],
                 lo: list[Fraction]) -> CheckResult:
    """value <= bound always; `proved-optimal` needs exact lambdas and value == bound."""
    if status not in STATUSES:
        raise CheckFailed(f"status {status!r} proves nothing (expected one of "
                          f"{', '.join(STATUSES)})")
    if value > bound:
        raise CheckFailed(f"value {show(value)} exceeds bound {show(bound)}")
    if status == "proved-optimal":
        exact = spec.lambdas_exact is not None or all(e == 0 for e in spec.epsilons_exact)
        if not exact or lo != up:
            raise CheckFailed("status proved-optimal needs the exact lambdas (use bracket)")
        if value != bound:
            raise CheckFailed(f"status proved-optimal but value {show(value)} != bound "
                              f"{show(bound)}")
        return CheckResult(True, f"proved value {show(value)}", value=value,
                           bracket=(value, bound))
    return CheckResult(True, f"bracket [{float(value):.17g}, {float(bound):.17g}] "
                             f"width {float(bound - value):.3g}", bracket=(value, bound))


def decision_rules(lower: dict, party: int, rows: int, m: int) -> list[list[list[Fraction]]]:
    """`lower.decision`: one rule (observer) or two (a party, per own bit), each `rows`
    rows of `m` rationals, every row a distribution (entries >= 0 summing to 1)."""
    raw = get_field(lower, "decision", list, "lower.")
    if party == 0:
        rules = [matrix(raw, rows, m, "lower.decision")]
    else:
        if len(raw) != 2:
            raise CertificateFormatError("`lower.decision` of a party needs 2 halves (own bit)")
        rules = [matrix(raw[b], rows, m, f"lower.decision[{b}]") for b in (0, 1)]
    for b, rule in enumerate(rules):
        for tau, row in enumerate(rule):
            if any(q < 0 for q in row) or sum(row) != 1:
                where = f"[{b}]" if party else ""
                raise CheckFailed(f"decision row{where}[{tau}] is not a distribution "
                                  f"(entries >= 0 summing to 1): sums to {show(sum(row))}")
    return rules
