"""What a certificate claims, checked against the spec: the problem, agent and accuracy it
is about, the privacy levels at its two ends, the prior and the bound, the decision rule
and the value, and the status (docs/format.md, steps 1, 3 and 5-6 of every format).

Nothing here (nor anywhere in dpverify/checker/) is cached or kept between calls: every
check recomputes from the spec it is given and the certificate, so the order in which
certificates are checked cannot change an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpverify.checker.fields import (
    CertificateFormatError,
    Json,
    Matrix,
    get_field,
    matrix,
    rational,
    show,
    vector,
)
from dpverify.spec.model import AgentSpec, MultipartySpec

FORMAT = "dpverify-certificate/1"
ORBIT_FORMAT = "dpverify-orbit-certificate/1"
MARY_FORMAT = "dpverify-mary-certificate/1"
DELTA_FORMAT = "dpverify-delta-certificate/1"
ENVELOPE_FORMAT = "dpverify-envelope-certificate/1"
INTERVAL_FORMAT = "dpverify-interval-certificate/1"
ORBIT_INTERVAL_FORMAT = "dpverify-orbit-interval-certificate/1"
STATUSES = ("proved-optimal", "bracket")


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
    upper: Json
    lower: Json


def read_header(spec: MultipartySpec, cert: Json, fmt: str) -> Header:
    """The format, and the problem, agent and accuracy the certificate is about."""
    if not isinstance(cert, dict):
        raise CertificateFormatError("a certificate is a JSON object")
    if cert.get("format") != fmt:
        raise CertificateFormatError(f"`format` must be {fmt!r}")
    problem = get_field(cert, "problem", str, "")
    if problem != spec.name:
        raise CheckFailed(f"the certificate is for problem {problem!r}, the spec is "
                          f"{spec.name!r}")
    if fmt != MARY_FORMAT and not spec.binary:
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


def read_outputs(cert: Json, expected: Sequence[Fraction]) -> list[Fraction]:
    """The certificate's outputs, which must be the spec's."""
    outputs = [rational(y, f"outputs[{j}]")
               for j, y in enumerate(get_field(cert, "outputs", list, ""))]
    if outputs != list(expected):
        raise CheckFailed(f"outputs {[show(y) for y in outputs]} differ from the spec's "
                          f"{[show(y) for y in expected]}")
    return outputs


# ------------------------------------------------------------------ the privacy levels


def compare_exp(r: Fraction, eps: Fraction) -> int | None:
    """The sign of r - e^eps, decided rigorously: arb balls (certified enclosures) of growing
    precision; None if still undecided at 4096 bits (e^eps is irrational for eps != 0)."""
    if eps == 0:
        return (r > 1) - (r < 1)
    from flint import arb, ctx, fmpq  # python-flint's balls only where e^eps is irrational

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


def read_levels(spec: MultipartySpec, head: Header, first: Sequence[int], names: Sequence[str]
                ) -> tuple[list[Fraction], list[Fraction]]:
    """upper.lambdas and lower.lambdas, one per entry of `first` (the 0-based party whose
    level entry c is; `names[c]` says whose it is, for the messages): up[c] >= the spec's
    lambda (the DP cone only grows, so the bound holds) and 1 <= lo[c] <= it (RR at lo is
    DP). Exactly the spec's when it is rational, else a rigorous bracket of e^eps (theory.md
    2.6), decided with arb intervals."""
    up = vector(head.upper, "lambdas", len(first), "upper.")
    lo = vector(head.lower, "lambdas", len(first), "lower.")
    for c, (u, v, party) in enumerate(zip(up, lo, first, strict=True)):
        if v < 1:
            raise CheckFailed(f"lower.lambdas[{c}] = {show(v)} is below 1")
        if spec.lambdas_exact is not None:
            lam = spec.lambdas_exact[party]
            if u != lam or v != lam:
                raise CheckFailed(f"lambdas[{c}] of {names[c]}: upper {show(u)}, lower "
                                  f"{show(v)}, but the spec's lambda is {show(lam)}")
            continue
        eps = (spec.epsilons_exact or ())[party]
        if compare_exp(v, eps) not in (-1, 0):
            raise CheckFailed(f"lower.lambdas[{c}] = {show(v)} is not <= {exp_text(eps)} "
                              f"(epsilon of {names[c]}): outside the bracket")
        if compare_exp(u, eps) not in (0, 1):
            raise CheckFailed(f"upper.lambdas[{c}] = {show(u)} is not >= {exp_text(eps)} "
                              f"(epsilon of {names[c]}): outside the bracket")
    return up, lo


def exp_text(eps: Fraction) -> str:
    """e^eps for a message: `e^1`, `e^(7/10)` (e^7/10 would read as e^7 divided by 10)."""
    text = show(eps)
    return f"e^{text}" if text.isdigit() else f"e^({text})"


def party_names(k: int) -> list[str]:
    return [f"party {i + 1}" for i in range(k)]


# ------------------------------------------------------------------ the two ends


def distribution(prior: Sequence[Fraction], mass: Sequence[int]) -> bool:
    """Entries >= 0 whose sum over the inputs (`mass[x]` inputs at entry x) is 1."""
    return all(p >= 0 for p in prior) and \
        sum(p * s for p, s in zip(prior, mass, strict=True)) == 1


def read_bound(upper: Json, mass: Sequence[int], accuracy: str,
               extra: Callable[[], tuple[Fraction, str]] | None = None
               ) -> tuple[list[Fraction], list[Fraction], Fraction]:
    """upper.prior and upper.mu (a value per input at each grid point, `mass[x]` inputs
    there) and upper.bound: the prior a distribution over the inputs, uniform for the
    average (theory.md 2.1), and bound = the sum over the inputs of mu, plus what `extra`
    returns (delta's sum(nu delta), with its name; read after the prior is checked)."""
    prior = read_prior(upper, mass, accuracy)
    mu = vector(upper, "mu", len(mass), "upper.")
    bound = rational(get_field(upper, "bound", (str, int), "upper."), "upper.bound")
    plus, text = extra() if extra is not None else (Fraction(0), "")
    total = sum((u * s for u, s in zip(mu, mass, strict=True)), Fraction(0)) + plus
    if total != bound:
        name = "sum(mu)" if all(s == 1 for s in mass) else "sum_W |W| mu_W"
        raise CheckFailed(f"upper.bound = {show(bound)} but {name}{text} = {show(total)}")
    return prior, mu, bound


def read_prior(upper: Json, mass: Sequence[int], accuracy: str) -> list[Fraction]:
    """upper.prior (a value per input at each grid point, `mass[x]` inputs there): a
    distribution over the inputs, uniform for the average (theory.md 2.1)."""
    prior = vector(upper, "prior", len(mass), "upper.")
    n = sum(mass)
    if not distribution(prior, mass):
        raise CheckFailed("upper.prior is not a distribution (entries >= 0 summing to 1 "
                          "over the inputs)")
    if accuracy == "average" and any(p != Fraction(1, n) for p in prior):
        shown = n if n.bit_length() <= 61 else "2^k"
        raise CheckFailed(f"upper.prior must be uniform (1/{shown}) for the average accuracy")
    return prior


def read_rules(lower: Json, parts: int, rows: int, outputs: int) -> list[Matrix]:
    """`lower.decision`: one rule (the observer) or one per own bit or symbol of a party
    (`parts`), each `rows` rows of `outputs` rationals, every row a distribution."""
    raw = get_field(lower, "decision", list, "lower.")
    if parts == 1:
        rules = [matrix(raw, rows, outputs, "lower.decision")]
    else:
        if len(raw) != parts:
            raise CertificateFormatError(f"`lower.decision` of a party needs {parts} blocks "
                                         "(one per own bit or symbol)")
        rules = [matrix(raw[b], rows, outputs, f"lower.decision[{b}]") for b in range(parts)]
    checked: set[tuple[int, ...]] = set()  # rows of the same Fractions (`matrix` shares
    for b, rule in enumerate(rules):  # them, alive in `rules`): each checked once
        for tau, row in enumerate(rule):
            if (key := tuple(map(id, row))) in checked:
                continue
            checked.add(key)
            if any(q < 0 for q in row if q) or sum(q for q in row if q) != 1:
                where = f"[{b}]" if parts > 1 else ""
                raise CheckFailed(f"decision row{where}[{tau}] is not a distribution "
                                  f"(entries >= 0 summing to 1): sums to {show(sum(row))}")
    return rules


def declared_value(lower: Json, value: Fraction, what: str) -> Fraction:
    """lower.value must be the accuracy recomputed here (`what` describes it)."""
    declared = rational(get_field(lower, "value", (str, int), "lower."), "lower.value")
    if declared != value:
        raise CheckFailed(f"lower.value = {show(declared)} but {what} is {show(value)}")
    return value


def final_status(spec: MultipartySpec, status: str, value: Fraction, bound: Fraction,
                 up: list[Fraction], lo: list[Fraction]) -> CheckResult:
    """value <= bound always; `proved-optimal` needs exact lambdas and value == bound."""
    if status not in STATUSES:
        raise CheckFailed(f"status {status!r} proves nothing (expected one of "
                          f"{', '.join(STATUSES)})")
    if value > bound:
        raise CheckFailed(f"value {show(value)} exceeds bound {show(bound)}")
    if status == "proved-optimal":
        exact = spec.lambdas_exact is not None or all(e == 0 for e in spec.epsilons_exact or ())
        if not exact or lo != up:
            raise CheckFailed("status proved-optimal needs the exact lambdas (use bracket)")
        if value != bound:
            raise CheckFailed(f"status proved-optimal but value {show(value)} != bound "
                              f"{show(bound)}")
        return CheckResult(True, f"proved value {show(value)}", value=value,
                           bracket=(value, bound))
    return bracket_result(value, bound)


def bracket_result(value: Fraction, bound: Fraction, how: str = "") -> CheckResult:
    return CheckResult(True, f"bracket [{float(value):.17g}, {float(bound):.17g}] "
                             f"width {float(bound - value):.3g}{how}", bracket=(value, bound))


def unused(obj: Json, key: str, where: str, why: str) -> None:
    """A key the format leaves out (CertificateFormatError if present)."""
    if key in obj:
        raise CertificateFormatError(f"`{where}{key}` is not part of {why}")

