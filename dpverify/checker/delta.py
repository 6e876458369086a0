"""The checker of `dpverify-delta-certificate/1`: the four-ray bound under approximate
privacy (docs/theory.md 7.2-7.4, docs/format.md), for parties that are
(epsilon_i, delta_i)-DP (KOV 2015, eq. (12)); one axis per party (its bit).

* upper (theory.md 7.4, the dual of the four-ray LP): party i's rays at lam_i = p_i / q_i
  are c0 = (lam, 1) / (1 + lam), c1 = (1, lam) / (1 + lam), and with delta_i > 0 also
  r0 = (1, 0), r1 = (0, 1); for every product T_s of rays and every label l

      sum_x T_s[x] (mu[x] - prior[x] gain(x, l)) + sum_rows nu[row] H_s(row) >= 0      (D)

  with one row per party i (delta_i > 0), own bit a (direction a -> b = 1 - a) and x_-i,
  H_s(row) = max(0, T_s(a, x_-i) - lam_i T_s(b, x_-i)), nu >= 0, and bound = sum(mu) +
  sum_rows nu[row] delta_i. The other factors of T_s are >= 0, so H_s(row) =
  prod_(j != i) r_(s_j)[x_j] max(0, r_(s_i)[a] - lam_i r_(s_i)[b]): sum_rows nu H_s is, per
  party, one more term of (C) in core.check_dual, with party i's rays replaced by their
  hockey-stick parts built here from that definition (the format's extra check). As
  integers: the rays (p, q), (q, p), (p + q, 0), (0, p + q) over p + q, their hockey-stick
  parts max(0, q r[a] - p r[b]) over q (p + q).
* lower: the product of the parties' RR(epsilon_i, delta_i) (theory.md 7.2; outputs
  reveal 0, say 0, say 1, reveal 1) at lower.lambdas, with the rule on its 4^k
  transcripts (core.accuracy).
"""

from __future__ import annotations

from fractions import Fraction

from dpverify.checker import claim, core
from dpverify.checker.bits import input_gains
from dpverify.checker.factors import Dense, Factor, transposed
from dpverify.checker.fields import CertificateFormatError, Json, get_field, rational, show, vector
from dpverify.spec.model import MultipartySpec

RAY_NAMES = ("corner0", "corner1", "reveal0", "reveal1")
DIRECTIONS = {"0->1": 0, "1->0": 1}
Row = tuple[int, int, int]  # (party, own bit a, the other parties' bits x_-i)


def check_delta(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    head = claim.read_header(spec, cert, claim.DELTA_FORMAT)
    k = spec.parties
    deltas = read_deltas(spec, cert)
    outputs, gain = input_gains(spec, cert, head)
    up, lo = claim.read_levels(spec, head, list(range(k)), claim.party_names(k))
    grid = core.party_grid((2,) * k, head.agent.party)
    nu: dict[Row, Fraction] = {}

    def nu_delta() -> tuple[Fraction, str]:  # read after the prior is checked
        nu.update(read_nu(head.upper, k, deltas))
        return sum((v * deltas[i - 1] for (i, _, _), v in nu.items()), Fraction(0)), \
            " + sum(nu delta)"

    prior, mu, bound = claim.read_bound(head.upper, grid.mass, head.accuracy, nu_delta)
    rays = [Dense(party_rays(lam, d), lam.numerator + lam.denominator)
            for lam, d in zip(up, deltas, strict=True)]
    left = [core.Term(tuple(rays), tuple(mu))] + [
        hockey_term(rays, i, up[i - 1], nu, k) for i in range(1, k + 1) if deltas[i - 1] > 0]
    counts = [4 if d > 0 else 2 for d in deltas]

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        name = ", ".join(show(outputs[y]) for y in label)
        return (f"dual feasibility fails at the product of rays s = {s} "
                f"({product_name(s, counts)}), label ({name}): sum_x T_s mu + sum nu H_s = "
                f"{show(left)} < sum_x T_s prior gain = {show(right)}")

    core.check_dual(core.Dual(grid, tuple(rays), tuple(prior), gain, tuple(left)), describe)
    value = rr_lower(head, grid, lo, deltas, len(outputs), gain)
    return claim.final_status(spec, head.status, value, bound, up, lo)


def rr_lower(head: claim.Header, grid: core.Grid, lo: list[Fraction], deltas: list[Fraction],
             outputs: int, gain: core.Gains) -> Fraction:
    """The lower end: the product of RR(epsilon_i, delta_i) at lower.lambdas with the
    certificate's rule on its 4^k transcripts, its accuracy recomputed (core.accuracy);
    it must be lower.value."""
    k = len(deltas)
    rules = claim.read_rules(head.lower, grid.parts, 4 ** k, outputs)
    rr = tuple(transposed(rr_kernel(lam, d), d.denominator * (lam.numerator + lam.denominator))
               for lam, d in zip(lo, deltas, strict=True))
    value = core.accuracy(core.Protocol(grid, rr, (1,) * 4 ** k, tuple(rules), gain),
                          head.accuracy)
    claim.declared_value(head.lower, value, f"the decision rule's {head.accuracy} accuracy "
                                            "under the product of RR(epsilon_i, delta_i)")
    return value


def read_deltas(spec: MultipartySpec, cert: Json) -> list[Fraction]:
    """`deltas`: the spec's (so that a certificate of another problem fails)."""
    deltas = vector(cert, "deltas", spec.parties, "")
    if deltas != list(spec.deltas):
        raise claim.CheckFailed(f"deltas {[show(d) for d in deltas]} differ from the spec's "
                                f"{[show(d) for d in spec.deltas]}")
    if any(not 0 <= d < 1 for d in deltas):
        raise claim.CheckFailed("every delta must lie in [0, 1)")
    return deltas


def party_rays(lam: Fraction, delta: Fraction) -> list[list[int]]:
    """A party's rays as integers over p + q (lam = p / q), rows the bit: c0, c1, and with
    delta > 0 r0, r1."""
    p, q = lam.numerator, lam.denominator
    rays = [[p, q, p + q, 0], [q, p, 0, p + q]]
    return rays if delta > 0 else [row[:2] for row in rays]


def hockey_term(rays: list[Dense], i: int, lam: Fraction, nu: dict[Row, Fraction], k: int
                ) -> core.Term:
    """sum over party i's rows of nu[row] H_s(row): party i's rays replaced by their
    hockey-stick parts H[a][s] = max(0, q r_s[a] - p r_s[1 - a]) (over q (p + q)), on the
    column nu[(i, x_i, x_-i)] (input x's row: own bit a = x_i, direction a -> 1 - a)."""
    p, q, r = lam.numerator, lam.denominator, rays[i - 1].matrix
    factors: list[Factor] = list(rays)
    factors[i - 1] = Dense([[max(0, q * r[a][s] - p * r[1 - a][s]) for s in range(len(r[a]))]
                            for a in (0, 1)], q * (p + q))
    column = [Fraction(0)] * (1 << k)
    for (party, a, others), value in nu.items():
        if party == i:
            column[with_bit(others, i, a, k)] = value
    return core.Term(tuple(factors), tuple(column))


def product_name(s: int, counts: list[int]) -> str:
    names = []
    for c in reversed(counts):
        names.append(RAY_NAMES[s % c])
        s //= c
    return " x ".join(reversed(names))


def read_nu(upper: Json, k: int, deltas: list[Fraction]) -> dict[Row, Fraction]:
    """upper.nu: one entry per party i with delta_i > 0, direction a -> 1 - a and x_-i
    ("others": the other parties' bits, party order), each >= 0, each exactly once."""
    wanted = {(i, a, o) for i in range(1, k + 1) if deltas[i - 1] > 0 for a in (0, 1)
              for o in range(1 << (k - 1))}
    nu: dict[Row, Fraction] = {}
    for j, item in enumerate(get_field(upper, "nu", list, "upper.")):
        where = f"upper.nu[{j}]."
        key = nu_row(item, where, k)
        party = key[0]
        if key not in wanted:
            raise claim.CheckFailed(f"upper.nu[{j}]: no hockey-stick row for party {party} "
                                    f"(delta = "
                                    f"{show(deltas[party - 1]) if 1 <= party <= k else '-'})")
        if key in nu:
            raise claim.CheckFailed(f"upper.nu[{j}]: the row of party {party}, "
                                    f"{item['direction']}, x_-i = {item['others'] or '()'} "
                                    "is given twice")
        nu[key] = rational(get_field(item, "value", (str, int), where), where + "value")
        if nu[key] < 0:
            raise claim.CheckFailed(f"upper.nu[{j}] = {show(nu[key])} is negative (nu >= 0)")
    if len(nu) != len(wanted):
        raise claim.CheckFailed(f"upper.nu has {len(nu)} rows, not {len(wanted)} (one per "
                                "party with delta > 0, direction and x_-i)")
    return nu


def nu_row(item: object, where: str, k: int) -> Row:
    """The row an entry of upper.nu names: (party, own bit a, x_-i as an integer)."""
    party = get_field(item, "party", int, where)
    direction = get_field(item, "direction", str, where)
    others = get_field(item, "others", str, where)
    if direction not in DIRECTIONS:
        raise CertificateFormatError(f"`{where}direction` must be '0->1' or '1->0'")
    if len(others) != k - 1 or any(c not in "01" for c in others):
        raise CertificateFormatError(f"`{where}others` must be {k - 1} bits (x_-i)")
    return party, DIRECTIONS[direction], int(others, 2) if others else 0


def with_bit(o: int, party: int, bit: int, k: int) -> int:
    """The input x with x_party = bit and the other parties' bits o (big-endian)."""
    low = k - party  # bits of the parties after `party`
    return ((((o >> low) << 1) | bit) << low) | (o & ((1 << low) - 1))


def rr_kernel(lam: Fraction, delta: Fraction) -> list[list[int]]:
    """RR(epsilon, delta) at lam = p / q, delta = r / t as integers over t (p + q); rows the
    bit, outputs (reveal 0, say 0, say 1, reveal 1) (KOV-C 2015; theory.md 7.2)."""
    p, q, r, t = lam.numerator, lam.denominator, delta.numerator, delta.denominator
    return [[r * (p + q), (t - r) * p, (t - r) * q, 0], [0, (t - r) * q, (t - r) * p, r * (p + q)]]
