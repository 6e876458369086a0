"""Grid protocols: interactive protocols on bits whose every message keeps each party's
factor on one of its rays, so that the protocol's state is a product of rays (issue 27;
docs/theory.md, section 7.11). The witnesses of the envelope bound are grid protocols.

**States.** Party j's factor u_j (the product of its kernel entries along the prefix) is
always one of five rays: the four of rr.py (c0, c1, r0, r1, normalised to sum 1) or the
all-ones vector u = (1, 1) before it has spoken (UNSPOKEN). A state is a tuple of rays, one
per party, numbered in mixed radix over five symbols (party 1 most significant).

**A round.** In a round party j splits its ray v into rays: it sends message m with
probability

    K[x_j][m] = kappa_m t_m[x_j] / v[x_j]     with   sum_m kappa_m t_m = v,   kappa >= 0

so that after message m its factor is kappa_m t_m: still a ray. The targets allowed from v
are v itself (`stay`), the corners and, when delta_j > 0, the reveal rays; a revealed party
only stays (its factor is a reveal ray times a scalar whatever it says). So a grid protocol
is given by its schedule of speakers and, per round and state, the split (t_m, kappa_m);
its transcripts' columns are kappa-products times products of rays, exactly, and its
hockey-stick sums are those of its final states' masses (rays.py), computed here without
enumerating transcripts (`final_masses`).

**Exact splits.** A split computed in floats is made exact (`exact_split`): every kappa but
two is rounded to a nearby short rational (`snapped`), and the last two are solved from
the two equations sum kappa t = v exactly, at the exact rays of a rational lambda.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from dpverify.records import record
from dpverify.theory.approx.rr import CORNER_0, CORNER_1, REVEAL_0, REVEAL_1

UNSPOKEN = 4
RAYS = 5
SNAP = 10**6  # kappas are rounded to rationals with denominators up to this,
SNAP_ERROR = 1e-13  # when that moves them by at most this; else to multiples of 2^-44
DYADIC = 1 << 44


def snapped(kappa: float) -> Fraction:
    """A short rational near `kappa`: its best approximation with denominator at most
    SNAP when within SNAP_ERROR, else the nearest multiple of 2^-44 (within 3e-14)."""
    short = Fraction(kappa).limit_denominator(SNAP)
    if abs(float(short) - kappa) <= SNAP_ERROR:
        return short
    return Fraction(round(kappa * DYADIC), DYADIC)


def ray_vector(ray: int, lam: Fraction) -> tuple[Fraction, Fraction]:
    """A ray exactly at a rational lambda: the corners and reveal rays normalised to sum 1
    (rr.four_rays), and UNSPOKEN = (1, 1)."""
    lam = Fraction(lam)
    if ray == CORNER_0:
        return lam / (1 + lam), 1 / (1 + lam)
    if ray == CORNER_1:
        return 1 / (1 + lam), lam / (1 + lam)
    if ray == REVEAL_0:
        return Fraction(1), Fraction(0)
    if ray == REVEAL_1:
        return Fraction(0), Fraction(1)
    if ray == UNSPOKEN:
        return Fraction(1), Fraction(1)
    raise ValueError(f"no ray {ray}")


def float_rays(lam: float) -> list[tuple[float, float]]:
    """The five rays in floats, in index order."""
    p, q = lam / (1.0 + lam), 1.0 / (1.0 + lam)
    return [(p, q), (q, p), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]


def targets(ray: int, reveals: bool) -> tuple[int, ...]:
    """The rays a party at `ray` may split into (module docstring), itself first."""
    if ray in (REVEAL_0, REVEAL_1):
        return (ray,)
    reveal = (REVEAL_0, REVEAL_1) if reveals else ()
    if ray == UNSPOKEN:
        return (ray, CORNER_0, CORNER_1) + reveal
    if not reveals:
        return (ray,)  # a pure party at a corner cannot move along its line
    return (ray, CORNER_1 if ray == CORNER_0 else CORNER_0) + reveal


def digits(state: int, k: int) -> list[int]:
    out = []
    for _ in range(k):
        state, d = divmod(state, RAYS)
        out.append(d)
    return out[::-1]


def encode(rays: Sequence[int]) -> int:
    s = 0
    for v in rays:
        s = s * RAYS + int(v)
    return s


def moved(state: int, party: int, ray: int, k: int) -> int:
    """The state with party `party` (0-based) at `ray`."""
    stride = RAYS ** (k - 1 - party)
    return state + (ray - (state // stride) % RAYS) * stride


def _solve2(a: tuple[Fraction, Fraction], b: tuple[Fraction, Fraction],
            r: tuple[Fraction, Fraction]) -> tuple[Fraction, Fraction] | None:
    det = a[0] * b[1] - a[1] * b[0]
    if det == 0:
        return None
    return (r[0] * b[1] - r[1] * b[0]) / det, (a[0] * r[1] - a[1] * r[0]) / det


def exact_split(v: int, split: Sequence[tuple[int, float]], lam: Fraction
                ) -> list[tuple[int, Fraction]] | None:
    """(target, kappa) pairs with sum kappa t = v exactly (module docstring), near the
    float `split`; None when no such split is found with every kappa >= 0. Targets whose
    kappa rounds to 0 are dropped."""
    vec = ray_vector(v, lam)
    order = sorted(split, key=lambda p: -p[1])
    rays = {t: ray_vector(t, lam) for t, _ in order}
    if len(order) == 1:
        return _collinear_split(vec, order, rays)
    for i in range(len(order)):
        for j in range(i + 1, len(order)):
            ti, tj = order[i][0], order[j][0]
            rest = [(t, snapped(kappa)) for n, (t, kappa) in enumerate(order)
                    if n not in (i, j)]
            rest = [(t, kappa) for t, kappa in rest if kappa > 0]
            left = (vec[0] - sum((kappa * rays[t][0] for t, kappa in rest), Fraction(0)),
                    vec[1] - sum((kappa * rays[t][1] for t, kappa in rest), Fraction(0)))
            solved = _solve2(rays[ti], rays[tj], left)
            if solved is None or solved[0] < 0 or solved[1] < 0:
                continue
            pairs = [(ti, solved[0]), (tj, solved[1])] + rest
            return [(t, kappa) for t, kappa in pairs if kappa > 0]
    return _collinear_split(vec, order, rays)


def _collinear_split(vec: tuple[Fraction, Fraction], order: Sequence[tuple[int, float]],
                     rays: dict[int, tuple[Fraction, Fraction]]
                     ) -> list[tuple[int, Fraction]] | None:
    """A split whose every target is a multiple of v (the corners and u at lambda = 1):
    one equation, sum kappa_t alpha_t = 1 with t = alpha_t v; every kappa but the largest
    rounded, the largest solved. None when some target is not a multiple of v."""
    scale = []
    for t, _ in order:
        ray = rays[t]
        if ray[0] * vec[1] != ray[1] * vec[0]:
            return None
        scale.append(ray[0] / vec[0] if vec[0] else ray[1] / vec[1])
    rest = [(t, snapped(kappa)) for t, kappa in order[1:]]
    left = 1 - sum((kappa * a for (_, kappa), a in zip(rest, scale[1:], strict=True)),
                   Fraction(0))
    first = left / scale[0]
    if first < 0:
        return None
    return [(t, kappa) for t, kappa in [(order[0][0], first)] + rest if kappa > 0]


def kernel_rows(v: int, split: Sequence[tuple[int, Fraction]], lam: Fraction
                ) -> list[list[Fraction]]:
    """The kernel of a split (messages in the order of `split`): row x is
    kappa_m t_m[x] / v[x]; a row whose input cannot reach this state (v[x] = 0) repeats
    the other row."""
    vec = ray_vector(v, lam)
    rows: list[list[Fraction] | None] = []
    for x in (0, 1):
        if vec[x] == 0:
            rows.append(None)
            continue
        rows.append([kappa * ray_vector(t, lam)[x] / vec[x] for t, kappa in split])
    filled = [r for r in rows if r is not None]
    out = [r if r is not None else filled[0] for r in rows]
    for row in out:
        if sum(row, Fraction(0)) != 1 or any(e < 0 for e in row):
            raise ArithmeticError("a split's kernel row is not a distribution")
    return out


@record
class GridRound:
    """One round: `party` (0-based) speaks; `splits[state]` is its split at each state it
    may reach there ((target, kappa) pairs, stay included when used); a state that is
    not listed stays."""

    party: int
    splits: dict[int, tuple[tuple[int, Fraction], ...]]

    def split(self, state: int, k: int) -> tuple[tuple[int, Fraction], ...]:
        return self.splits.get(state, ((digits(state, k)[self.party], Fraction(1)),))

    @property
    def messages(self) -> int:
        return max((len(s) for s in self.splits.values()), default=1)


@record
class GridProtocol:
    """A grid protocol at the rational levels `lambdas` (its rays), for k parties."""

    parties: int
    lambdas: tuple[Fraction, ...]
    rounds: tuple[GridRound, ...]

    @property
    def start(self) -> int:
        return encode([UNSPOKEN] * self.parties)

    @property
    def transcripts(self) -> int:
        return math.prod(r.messages for r in self.rounds)


def final_masses(protocol: GridProtocol) -> dict[int, Fraction]:
    """The mass of every final state: P(t | x) summed over the transcripts that end at
    state s is mass(s) T_s[x], exactly (module docstring)."""
    k = protocol.parties
    masses = {protocol.start: Fraction(1)}
    for rnd in protocol.rounds:
        nxt: dict[int, Fraction] = {}
        for s, mass in masses.items():
            for t, kappa in rnd.split(s, k):
                s2 = moved(s, rnd.party, t, k)
                nxt[s2] = nxt.get(s2, Fraction(0)) + mass * kappa
        masses = nxt
    return masses


def state_column(state: int, protocol: GridProtocol) -> list[Fraction]:
    """T_s[x] for every input (x1 most significant) of a state, exactly."""
    k = protocol.parties
    col = [Fraction(1)]
    for j, ray in enumerate(digits(state, k)):
        vec = ray_vector(ray, protocol.lambdas[j])
        col = [c * e for c in col for e in vec]
    return col


def hockey_sums(protocol: GridProtocol, lambdas: Sequence[Fraction]) -> list[Fraction]:
    """Each party's achieved delta at `lambdas` (at most its rays' level), exactly: the
    largest over a -> b and x_-i of sum_s mass(s) max(0, T_s(a, x_-i) - lam T_s(b, x_-i))."""
    k = protocol.parties
    masses = final_masses(protocol)
    columns = {s: state_column(s, protocol) for s in masses}
    out = []
    for i in range(k):
        lam = Fraction(lambdas[i])
        stride = 1 << (k - 1 - i)
        best = Fraction(0)
        for a in (0, 1):
            for x in range(1 << k):
                if (x >> (k - 1 - i)) & 1 != a:
                    continue
                y = x ^ stride  # the same others with party i's bit 1 - a
                total = sum((mass * max(Fraction(0), columns[s][x] - lam * columns[s][y])
                             for s, mass in masses.items()), Fraction(0))
                best = max(best, total)
        out.append(best)
    return out
