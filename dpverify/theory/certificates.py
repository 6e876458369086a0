"""Exact certificates of optimality (theory.md, "Certificates"; KOV 2015, Theorem 3.1).

Upper bound. For a prior pi on inputs and mu on inputs, if for every corner s (a column
T_s of S = S_1 (x) ... (x) S_k) and every label l
    sum_x T_s[x] mu[x] >= sum_x T_s[x] pi[x] gain(x, l)                          (C)
then, by multilinearity, (C) holds for every rank-one DP tensor, and sum(mu) bounds the
accuracy under pi of every DP protocol, hence its worst-case accuracy too.

Construction (S symmetric, rows and columns summing to 1): v[s] = max_l (S (pi * g_l))[s]
and mu = S^-1 v. Then S^T mu = v, so (C) holds with equality at the maximising label, and
sum(mu) = 1^T S^-1 v = sum(v). For a party the labels are pairs (y0, y1) with
gain(x, (y0, y1)) = w(f(x), y_{x_i}), and the maximum separates per own bit:
v[s] = sum_b max_y (S (pi * 1[x_i = b] * g_y))[s].
sum(v) is the accuracy under pi of RR with the Bayes rule for pi, so:

* average (pi uniform): the bound equals RR's average accuracy with the argmax rule
  (KOV eq. 2, 5), exactly;
* worst case: with pi an optimal minimax prior of RR's worst-case decision LP (KOV eq. 4, 6;
  its LP dual), sum(v) equals RR's worst-case value (LP duality). The prior and the
  decision rule are recovered exactly from float LP solutions on their supports
  (complementary slackness), in the orbit space of the problem's symmetries.

Lower bound: RR with an explicit rule, its accuracy computed exactly. lambda = e^eps: the
bound is computed at rationals lambda_hi >= e^eps, the rule's value at lambda_lo <= e^eps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from dpverify.theory.exact import (
    Scaled,
    from_fmpq,
    rational_string,
    rr_apply,
    rr_inverse_apply,
    simplex_max,
    unlimited_int_digits,
)
from dpverify.theory.rr import kron_apply, rr_channel

FORMAT = "dpverify-certificate/1"
PROVED = "proved-optimal"
BRACKET = "bracket"
UNPROVED = "unproved"

SUPPORT_TOL = 1e-9  # float LP values below this (relative) are taken as exact zeros
RATIONAL_DENOMINATOR = 10**9  # free variables are rationalised with at most this denominator
MAX_REPAIR_ROUNDS = 12
# The exact simplex (the fallback) runs on tableaux of at most this many entries.
MAX_EXACT_TABLEAU = 60_000
# A bracket is accepted from the fast path when its relative width is below this.
BRACKET_TOLERANCE = Fraction(1, 10**12)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, eq=False)
class Certificate:
    """An exact certificate (issue 3's format). `decision` is Q[tau][y] for the observer and
    Q[b][tau][y] for a party; every number is a Fraction."""

    agent: str
    accuracy: str
    outputs: tuple[Fraction, ...]
    gain: tuple[tuple[Fraction, ...], ...]
    upper_lambdas: tuple[Fraction, ...]
    prior: tuple[Fraction, ...]
    mu: tuple[Fraction, ...]
    bound: Fraction
    lower_lambdas: tuple[Fraction, ...]
    decision: tuple
    value: Fraction
    status: str
    notes: tuple[str, ...] = field(default=())

    @property
    def width(self) -> Fraction:
        return self.bound - self.value

    def to_json(self, problem: str) -> dict:
        with unlimited_int_digits():
            return self._to_json(problem)

    def _to_json(self, problem: str) -> dict:
        out = {
            "format": FORMAT, "problem": problem, "agent": self.agent,
            "accuracy": self.accuracy,
            "outputs": [_json_output(y) for y in self.outputs],
            "gain": [[rational_string(w) for w in row] for row in self.gain],
            "upper": {"lambdas": [rational_string(v) for v in self.upper_lambdas],
                      "prior": [rational_string(v) for v in self.prior],
                      "mu": [rational_string(v) for v in self.mu],
                      "bound": rational_string(self.bound)},
            "lower": {"lambdas": [rational_string(v) for v in self.lower_lambdas],
                      "decision": _nested_strings(self.decision),
                      "value": rational_string(self.value)},
            "status": self.status,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _json_output(y: Fraction):
    y = Fraction(y)
    return y.numerator if y.denominator == 1 else rational_string(y)


def _nested_strings(obj):
    if isinstance(obj, (list, tuple)):
        return [_nested_strings(v) for v in obj]
    return rational_string(obj)


@dataclass(frozen=True, eq=False)
class Orbits:
    """Orbits of the inputs under the problem's symmetry group (parties with equal lambda
    whose swap leaves the agent's gain table unchanged; the agent's own party is fixed).

    `ids[x]` is the orbit of input x, `reps[o]` its first member, `sizes[o]` its size.
    The trivial partition (every input its own orbit) is always valid.
    """

    ids: np.ndarray
    reps: np.ndarray
    sizes: np.ndarray
    blocks: tuple[tuple[int, ...], ...]

    @property
    def count(self) -> int:
        return int(self.reps.size)


@dataclass(frozen=True, eq=False)
class WorstHint:
    """Float hints for one worst-case sub-problem (the observer, or a party's own bit b):
    `rule[o, y]` a decision rule per tau-orbit, `prior[a]` the prior mass of each relevant
    x-orbit (`x_orbits[a]`), or None when unknown."""

    rule: np.ndarray
    prior: np.ndarray | None
    x_orbits: np.ndarray


# --------------------------------------------------------------------------- helpers


def own_bits(k: int, party: int) -> np.ndarray:
    """The party-th bit (1-based, x1 most significant) of every input."""
    return (np.arange(1 << k) >> (k - party)) & 1


def _parts(k: int, party: int) -> list[np.ndarray | None]:
    """Masks of the inputs each part of the label maximum ranges over (theory.md: a party's
    label (y0, y1) separates per own bit)."""
    if party == 0:
        return [None]
    bits = own_bits(k, party)
    return [bits == 0, bits == 1]


def _weighted_gain(gain: Scaled, prior: Scaled, mask: np.ndarray | None) -> Scaled:
    """prior[x] * gain[x, y] (zero outside mask) as one scaled matrix."""
    num = prior.num[:, None] * gain.num
    if mask is not None:
        num = np.where(mask[:, None], num, 0)
    return Scaled(num.astype(object), prior.den * gain.den)


def _row_max(num: np.ndarray) -> np.ndarray:
    return np.array([max(row) for row in num.tolist()], dtype=object)


def _argmax_first(row: list) -> int:
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:
            best = j
    return best


def _rat(x: float) -> Fraction:
    """A float hint as a small rational (never negative)."""
    if not math.isfinite(x) or x <= 0:
        return Fraction(0)
    return Fraction(x).limit_denominator(RATIONAL_DENOMINATOR)


# --------------------------------------------------------------------------- upper bound


def label_maxima(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                 prior: Scaled) -> Scaled:
    """v[s] = max over labels of sum_x T_s[x] pi[x] gain(x, label) (theory.md, Certificates).

    For a party, the maximum over pairs (y0, y1) is the sum of the per-own-bit maxima.
    """
    k = int(gain.num.shape[0]).bit_length() - 1
    parts = [rr_apply(lambdas, _weighted_gain(gain, prior, mask)) for mask in _parts(k, party)]
    total = sum((_row_max(scores.num) for scores in parts[1:]), _row_max(parts[0].num))
    return Scaled(total, parts[0].den)  # every part has the same denominator


def upper_from_prior(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                     prior: Sequence[Fraction]) -> tuple[list[Fraction], Fraction]:
    """mu = S^-1 v and bound = sum(mu) = sum(v) for the given exact prior."""
    v = label_maxima(lambdas, gain, party, Scaled.from_fractions(list(prior)))
    mu = rr_inverse_apply(lambdas, v)
    bound = mu.total()
    return mu.fractions(), bound


def check_upper(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                prior: Sequence[Fraction], mu: Sequence[Fraction], bound: Fraction,
                uniform: bool) -> str:
    """The construction's own check of (C): S mu (forward transform) against every label's
    right-hand side; '' when it holds, else the first failure."""
    n = gain.num.shape[0]
    if any(p < 0 for p in prior) or sum(prior) != 1:
        return "the prior is not a distribution"
    if uniform and any(p != Fraction(1, n) for p in prior):
        return "the prior is not uniform"
    if sum(mu) != bound:
        return "bound != sum(mu)"
    lhs = rr_apply(lambdas, Scaled.from_fractions(list(mu)))
    v = label_maxima(lambdas, gain, party, Scaled.from_fractions(list(prior)))
    # lhs.num / lhs.den >= v.num / v.den for every corner
    for s, (a, b) in enumerate(zip(lhs.num.tolist(), v.num.tolist())):
        if a * v.den < b * lhs.den:
            return f"corner {s}: sum_x T_s mu = {Fraction(a, lhs.den)} < {Fraction(b, v.den)}"
    return ""


# --------------------------------------------------------------------------- lower bound


def input_accuracies(lambdas: Sequence[Fraction], gain: Scaled, party: int,
                     decision) -> Scaled:
    """acc[x] = sum_tau P_RR[x, tau] sum_y Q[tau, y] w(f(x), y) exactly (KOV eqs. 2-6).

    A party decides from (tau, x_i): input x uses Q[x_i].
    """
    k = int(gain.num.shape[0]).bit_length() - 1
    q = Scaled.from_fractions(decision)
    if party == 0:
        u = rr_apply(lambdas, q)
        num = (gain.num * u.num).sum(axis=1)
        return Scaled(num, gain.den * u.den)
    bits = own_bits(k, party)
    u0 = rr_apply(lambdas, Scaled(q.num[0], q.den))
    u1 = rr_apply(lambdas, Scaled(q.num[1], q.den))
    mixed = np.where(bits[:, None] == 1, u1.num, u0.num)
    num = (gain.num * mixed).sum(axis=1)
    return Scaled(num, gain.den * u0.den)


def rule_value(lambdas: Sequence[Fraction], gain: Scaled, party: int, decision,
               worst: bool, relevant: np.ndarray | None = None) -> Fraction:
    """The exact accuracy of RR with `decision`: average over all inputs, or the minimum
    over the relevant ones (default all)."""
    acc = input_accuracies(lambdas, gain, party, decision)
    n = acc.num.shape[0]
    if worst:
        vals = acc.num if relevant is None else acc.num[relevant]
        return Fraction(int(min(vals.tolist())), acc.den)
    return Fraction(int(sum(acc.num.tolist())), acc.den * n)


def check_lower(lambdas: Sequence[Fraction], gain: Scaled, party: int, decision,
                value: Fraction, worst: bool) -> str:
    rows = decision if party == 0 else [r for half in decision for r in half]
    for tau, row in enumerate(rows):
        if any(q < 0 for q in row) or sum(row) != 1:
            return f"decision row {tau} is not a distribution"
    got = rule_value(lambdas, gain, party, decision, worst)
    return "" if got == value else f"declared value {value} != recomputed {got}"


def average_rule(lambdas: Sequence[Fraction], gain: Scaled, party: int):
    """RR's optimal average-case rule: argmax_y sum_x P[x, tau] w(f(x), y) (KOV eq. 2), per
    own bit for a party (eq. 5); ties to the first output."""
    k = int(gain.num.shape[0]).bit_length() - 1
    m = gain.num.shape[1]
    ones = Scaled.from_ints([1] * (1 << k))
    rules = []
    for mask in _parts(k, party):
        scores = rr_apply(lambdas, _weighted_gain(gain, ones, mask)).num.tolist()
        rule = []
        for row in scores:
            best = _argmax_first(row)
            rule.append(tuple(Fraction(int(j == best)) for j in range(m)))
        rules.append(tuple(rule))
    return rules[0] if party == 0 else tuple(rules)


# --------------------------------------------------------------------------- certificates


def _status(lower: Sequence[Fraction], upper: Sequence[Fraction], value: Fraction,
            bound: Fraction, exact_lambdas: bool) -> str:
    if value > bound:
        return UNPROVED
    if exact_lambdas and tuple(lower) == tuple(upper) and value == bound:
        return PROVED
    return BRACKET


def average_certificate(agent: str, outputs, gain_exact, party: int,
                        lower: Sequence[Fraction], upper: Sequence[Fraction],
                        exact_lambdas: bool) -> Certificate:
    """Uniform prior, mu = S^-1 v at the upper lambdas; the argmax rule at the lower ones."""
    gain = Scaled.from_fractions(gain_exact)
    n = gain.num.shape[0]
    prior = tuple([Fraction(1, n)] * n)
    mu, bound = upper_from_prior(upper, gain, party, prior)
    decision = average_rule(lower, gain, party)
    value = rule_value(lower, gain, party, decision, worst=False)
    return _finish(agent, "average", outputs, gain_exact, gain, party, lower, upper, prior,
                   mu, bound, decision, value, exact_lambdas, uniform=True, notes=())


def _finish(agent, accuracy, outputs, gain_exact, gain, party, lower, upper, prior, mu,
            bound, decision, value, exact_lambdas, uniform, notes) -> Certificate:
    problems = [check_upper(upper, gain, party, prior, mu, bound, uniform),
                check_lower(lower, gain, party, decision, value, accuracy == "worst")]
    status = _status(lower, upper, value, bound, exact_lambdas)
    failed = [p for p in problems if p]
    if failed:
        status = UNPROVED
        notes = tuple(notes) + tuple(f"self-check failed: {p}" for p in failed)
    return Certificate(
        agent=agent, accuracy=accuracy, outputs=tuple(outputs),
        gain=tuple(tuple(Fraction(w) for w in row) for row in gain_exact),
        upper_lambdas=tuple(upper), prior=tuple(prior), mu=tuple(mu), bound=bound,
        lower_lambdas=tuple(lower), decision=decision, value=value, status=status,
        notes=tuple(notes))


# --------------------------------------------------------------------------- symmetry


def symmetry_orbits(keys: Sequence, gain_exact, party: int) -> Orbits:
    """Orbits under the parties that can be permuted: i, j (not the agent's own party) with
    equal privacy `keys` (exact lambdas or epsilons) and gain[x] = gain[swap_ij(x)] for
    every x. Transpositions generate the symmetric group of each connected block.

    RR's worst-case LP is invariant under such permutations (P[gx, g tau] = P[x, tau]), so
    averaging an optimal solution over the group keeps it optimal: an optimal rule constant
    on tau-orbits and an optimal prior constant on x-orbits exist.
    """
    k = len(keys)
    n = 1 << k
    codes: dict[tuple, int] = {}
    row_code = np.array([codes.setdefault(tuple(row), len(codes)) for row in gain_exact])
    index = np.arange(n)
    parent = list(range(k + 1))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i in range(1, k + 1):
        for j in range(i + 1, k + 1):
            if party in (i, j) or keys[i - 1] != keys[j - 1] or find(i) == find(j):
                continue
            bi, bj = k - i, k - j
            differ = ((index >> bi) & 1) != ((index >> bj) & 1)
            swapped = np.where(differ, index ^ ((1 << bi) | (1 << bj)), index)
            if np.array_equal(row_code, row_code[swapped]):
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(1, k + 1):
        groups.setdefault(find(i), []).append(i)
    blocks = tuple(tuple(g) for g in groups.values() if len(g) > 1)
    # orbit key: the number of ones in each block, and every other party's own bit
    in_block = {i for b in blocks for i in b}
    key = np.zeros(n, dtype=np.int64)
    for b in blocks:
        ones = sum(((index >> (k - i)) & 1) for i in b)
        key = key * (len(b) + 1) + ones
    for i in range(1, k + 1):
        if i not in in_block:
            key = key * 2 + ((index >> (k - i)) & 1)
    _, reps, ids = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(reps)  # number orbits by their first member
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    ids = rank[ids]
    reps = reps[order]
    sizes = np.bincount(ids, minlength=reps.size)
    return Orbits(ids=ids, reps=reps, sizes=sizes, blocks=blocks)


def trivial_orbits(k: int) -> Orbits:
    n = 1 << k
    idx = np.arange(n)
    return Orbits(ids=idx, reps=idx, sizes=np.ones(n, dtype=np.int64), blocks=())


def reduced_rr_data(lambdas: Sequence[float], gain: np.ndarray, orbits: Orbits,
                    relevant: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RR's worst-case decision LP (KOV eqs. 4, 6) on orbits, in floats, for the LP hint.

    Returns (A, G, x_orbits): A[a, o] = sum_{tau in o} P[rep(a), tau] for the relevant
    x-orbits a, G[a, y] = w(f(rep(a)), y). The reduced LP: maximise t subject to
    sum_{o, y} A[a, o] G[a, y] q[o, y] >= t for every a, sum_y q[o, y] = 1, q >= 0.
    """
    n = gain.shape[0]
    indicator = np.zeros((n, orbits.count))
    indicator[np.arange(n), orbits.ids] = 1.0
    SP = kron_apply([rr_channel(lam) for lam in lambdas], indicator)
    x_orbits = np.arange(orbits.count)
    if relevant is not None:
        x_orbits = x_orbits[relevant[orbits.reps]]
    reps = orbits.reps[x_orbits]
    return SP[reps], gain[reps], x_orbits


# --------------------------------------------------------------------------- exact repair


def _solve_near(rows: list[list[Fraction]], rhs: list[Fraction],
                guess: Sequence[float]) -> list[Fraction] | None:
    """An exact solution of rows @ z = rhs near `guess`: free variables take the guess
    (rationalised), pivot variables are solved exactly. None if inconsistent."""
    u = len(guess)
    if not rows:
        return [_rat(g) for g in guess]
    entries = []
    for row, b in zip(rows, rhs):
        for v in list(row) + [b]:
            if isinstance(v, int):
                entries.append(fmpq(v))
            else:
                v = Fraction(v)
                entries.append(fmpq(v.numerator, v.denominator))
    R, rank = fmpq_mat(len(rows), u + 1, entries).rref()
    pivots = []
    for r in range(rank):
        c = next(c for c in range(u + 1) if R[r, c] != 0)
        if c == u:
            return None  # 0 = nonzero: inconsistent
        pivots.append(c)
    pivot_set = set(pivots)
    z = [Fraction(0)] * u
    for c in range(u):
        if c not in pivot_set:
            z[c] = _rat(float(guess[c]))
    for r, c in enumerate(pivots):
        acc = from_fmpq(R[r, u])
        for f in range(u):
            if f not in pivot_set:
                coef = R[r, f]
                if coef != 0:
                    acc -= from_fmpq(coef) * z[f]
        z[c] = acc
    return z


def _support(rule_row: np.ndarray) -> list[int]:
    top = float(np.max(rule_row))
    supp = [j for j, v in enumerate(rule_row) if v > SUPPORT_TOL * max(top, 1.0)]
    return supp or [int(np.argmax(rule_row))]


def _lift_rule(orbits: Orbits, rows: list[list[Fraction]]) -> list[tuple[Fraction, ...]]:
    return [tuple(rows[o]) for o in orbits.ids.tolist()]


def _members(orbits: Orbits) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(orbits.count)]
    for x, o in enumerate(orbits.ids.tolist()):
        out[o].append(x)
    return out


def _for_accuracy(rule: list, party: int):
    """A decision argument for input_accuracies: a party's sub-problem uses one half for
    both own bits (only the inputs with that bit are read)."""
    return rule if party == 0 else (rule, rule)


def _relevant(k: int, party: int, bit: int | None) -> np.ndarray | None:
    return None if bit is None else own_bits(k, party) == bit


def exact_worst_rule(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                     orbits: Orbits, hint: WorstHint) -> tuple[list | None, str]:
    """An exact worst-case rule for RR (KOV eq. 4; eq. 6 per own bit), constant on tau-orbits,
    from a float hint. Complementary slackness with the LP dual: every input in the prior's
    support is tight, acc[x] = t; the rule keeps the hint's support. Unknowns: the hint's
    fractional entries and t; solved exactly, then every other input is checked (acc >= t)
    and a violated one is made tight and the system solved again.

    Returns (rule[tau][y] over all tau, '') or (None, reason).
    """
    n, m = gain.num.shape
    supports = [_support(hint.rule[o]) for o in range(orbits.count)]
    frac = [o for o in range(orbits.count) if len(supports[o]) > 1]
    x_orbits = hint.x_orbits.tolist()
    det = [[Fraction(int(j == supports[o][0])) for j in range(m)] for o in range(orbits.count)]
    if not frac:
        return _lift_rule(orbits, det), ""
    for o in frac:
        det[o] = [Fraction(0)] * m
    det_acc = input_accuracies(lambdas, gain, party, _for_accuracy(_lift_rule(orbits, det), party))
    # A[x, c] = sum_{tau in orbit frac[c]} P[x, tau]: transforms of the orbits' indicators
    ind = np.zeros((n, len(frac)), dtype=object)
    for c, o in enumerate(frac):
        ind[:, c] = (orbits.ids == o).astype(np.int64).tolist()
    A = rr_apply(lambdas, Scaled(ind, 1))
    unknowns = [(c, o, y) for c, o in enumerate(frac) for y in supports[o]]
    guess = [float(hint.rule[o][y]) for _, o, y in unknowns] + [0.0]

    def acc_row(x: int) -> tuple[list[Fraction], Fraction]:
        gx = gain.num[x]
        row = [Fraction(int(A.num[x, c]) * int(gx[y]), A.den * gain.den) for c, _, y in unknowns]
        return row, Fraction(int(det_acc.num[x]), det_acc.den)

    tight = _prior_support(hint)
    if not tight:  # no prior: the inputs at the float minimum
        est = {}
        for a in x_orbits:
            row, const = acc_row(int(orbits.reps[a]))
            est[a] = float(const) + sum(float(r) * g for r, g in zip(row, guess))
        lo = min(est.values())
        tight = {a for a, v in est.items() if v <= lo + 1e-9 * max(1.0, abs(lo))}
    for _ in range(MAX_REPAIR_ROUNDS):
        rows, rhs = [], []
        for a in sorted(tight):
            row, const = acc_row(int(orbits.reps[a]))
            rows.append(row + [Fraction(-1)])
            rhs.append(-const)
        for c in range(len(frac)):
            rows.append([Fraction(int(cc == c)) for cc, _, _ in unknowns] + [Fraction(0)])
            rhs.append(Fraction(1))
        z = _solve_near(rows, rhs, guess)
        if z is None:
            return None, "the rule's complementary-slackness equations are inconsistent"
        if any(v < 0 for v in z[:-1]):
            return None, "the exact rule on the hint's support has a negative entry"
        full = [list(r) for r in det]
        for (_, o, y), v in zip(unknowns, z[:-1]):
            full[o][y] = v
        rule = _lift_rule(orbits, full)
        acc = input_accuracies(lambdas, gain, party, _for_accuracy(rule, party))
        t = z[-1]
        below = {a for a in x_orbits
                 if Fraction(int(acc.num[int(orbits.reps[a])]), acc.den) < t}
        if not below:
            return rule, ""
        tight |= below
    return None, "the rule's tight set did not settle"


def _prior_support(hint: WorstHint) -> set[int]:
    if hint.prior is None or not np.any(hint.prior > 0):
        return set()
    top = float(np.max(hint.prior))
    return {a for a, p in zip(hint.x_orbits.tolist(), hint.prior.tolist())
            if p > SUPPORT_TOL * top}


def exact_worst_prior(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                      orbits: Orbits, hint: WorstHint, near_ties: bool = True
                      ) -> tuple[list[Fraction] | None, str]:
    """An exact minimax prior (the dual of KOV eq. 4/6), constant on x-orbits, from a float
    hint. Complementary slackness: on every tau the rule's support maximises the score
    sum_x P[x, tau] pi[x] w(f(x), y), so the supported outputs tie. Unknowns: the prior
    pi_a of each input of x-orbit a in the hint's support; equations: sum pi = 1 and the
    ties (with `near_ties`, also the outputs whose float score is within 1e-9 of the tie);
    then every other output is checked (score <= the tie) and a violated one is tied and
    the system solved again. Returns (pi over all inputs, '') or (None, reason).
    """
    n, m = gain.num.shape
    k = n.bit_length() - 1
    mask = _relevant(k, party, bit)
    support = sorted(_prior_support(hint))
    if not support or hint.prior is None:
        return None, "no prior hint"
    members = _members(orbits)
    sizes = [int(orbits.sizes[a]) for a in support]
    mass_of = dict(zip(hint.x_orbits.tolist(), hint.prior.tolist()))
    guess = [float(mass_of[a]) / size for a, size in zip(support, sizes)]
    supports = [_support(hint.rule[o]) for o in range(orbits.count)]
    ties = {(o, y) for o in range(orbits.count) for y in supports[o][1:]}
    reps = orbits.reps
    if near_ties:
        ties |= _near_ties(lambdas, gain, orbits, mask, members, support, guess, supports)
    g_int = [[int(v) for v in gain.num[int(reps[a])]] for a in support]  # over gain.den
    columns: dict[int, list[int]] = {}  # K[a, o] = sum_{x in a} P[x, rep(o)] (over a den)
    cached_rows: dict[tuple[int, int], list[int]] = {}

    def fill_columns(needed: list[int]) -> None:
        new = [o for o in needed if o not in columns]
        if not new:
            return
        e = np.zeros((n, len(new)), dtype=object)
        for c, o in enumerate(new):
            e[int(reps[o]), c] = 1
        col = rr_apply(lambdas, Scaled(e, 1)).num
        for c, o in enumerate(new):
            columns[o] = [int(sum(col[members[a], c].tolist())) for a in support]

    for _ in range(MAX_REPAIR_ROUNDS):
        fill_columns(sorted({o for o, _ in ties}))
        rows: list[list] = [sizes]
        rhs: list = [1]
        for o, y in sorted(ties):
            if (o, y) not in cached_rows:
                y0 = supports[o][0]
                K = columns[o]
                cached_rows[(o, y)] = [K[i] * (g_int[i][y] - g_int[i][y0])
                                       for i in range(len(support))]
            rows.append(cached_rows[(o, y)])
            rhs.append(0)
        pi = _solve_near(rows, rhs, guess)
        if pi is None:
            return None, "the prior's complementary-slackness equations are inconsistent"
        if any(r < 0 for r in pi):
            return None, "the exact prior on the hint's support has a negative entry"
        prior = [Fraction(0)] * n
        for share, a in zip(pi, support):
            for x in members[a]:
                prior[x] = share
        scores = rr_apply(lambdas, _weighted_gain(gain, Scaled.from_fractions(prior), mask))
        added = set()
        for o in range(orbits.count):
            row = scores.num[int(reps[o])]
            y0 = supports[o][0]
            for y in range(m):
                if row[y] > row[y0] and (o, y) not in ties:
                    added.add((o, y))
        if not added:
            return prior, ""
        ties |= added
    return None, "the prior's ties did not settle"


def _near_ties(lambdas, gain: Scaled, orbits: Orbits, mask, members, support, guess,
               supports) -> set[tuple[int, int]]:
    """(o, y) whose float score at the hint's prior is within 1e-9 of the rule's output."""
    n, m = gain.num.shape
    prior = np.zeros(n)
    for share, a in zip(guess, support):
        prior[members[a]] = share
    g = np.array([[float(Fraction(int(v), gain.den)) for v in row] for row in gain.num.tolist()])
    if mask is not None:
        g = np.where(mask[:, None], g, 0.0)
    scores = kron_apply([rr_channel(float(lam)) for lam in lambdas], prior[:, None] * g)
    scale = 1e-9 * max(float(np.max(np.abs(scores))), 1e-300)
    out = set()
    for o in range(orbits.count):
        row = scores[int(orbits.reps[o])]
        y0 = supports[o][0]
        for y in range(m):
            if y != y0 and y not in supports[o] and row[y] >= row[y0] - scale:
                out.add((o, y))
    return out


def rationalised_rule(orbits: Orbits, rule_hint: np.ndarray) -> list:
    """A fallback: the hint's rows as small rationals, normalised exactly."""
    rows = []
    for o in range(orbits.count):
        r = [_rat(float(v)) for v in rule_hint[o]]
        if sum(r) == 0:
            r = [Fraction(int(j == int(np.argmax(rule_hint[o])))) for j in range(len(r))]
        s = sum(r)
        rows.append([v / s for v in r])
    return _lift_rule(orbits, rows)


def rationalised_prior(orbits: Orbits, hint: WorstHint, n: int) -> list[Fraction] | None:
    """A fallback: the hint's prior as small rationals, normalised exactly (any distribution
    gives a valid upper bound, only a weaker one)."""
    if hint.prior is None:
        return None
    rho = [_rat(float(p)) for p in hint.prior]
    total = sum(rho)
    if total == 0:
        return None
    prior = [Fraction(0)] * n
    members = _members(orbits)
    for r, a in zip(rho, hint.x_orbits.tolist()):
        for x in members[a]:
            prior[x] = r / total / int(orbits.sizes[a])
    return prior


def uniform_prior(n: int, relevant: np.ndarray | None) -> list[Fraction]:
    idx = range(n) if relevant is None else np.flatnonzero(relevant).tolist()
    share = Fraction(1, len(idx))
    prior = [Fraction(0)] * n
    for x in idx:
        prior[x] = share
    return prior


def exact_lp_size(orbits: Orbits, m: int, relevant_orbits: int) -> int:
    """Entries of the exact simplex tableau of the reduced worst-case LP."""
    rows = relevant_orbits + orbits.count
    return rows * (orbits.count * m + 1 + relevant_orbits + 1)


def exact_worst_lp(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                   orbits: Orbits) -> tuple[list, list[Fraction], Fraction]:
    """RR's worst-case decision LP (KOV eq. 4; eq. 6 for a party's own bit) on orbits, solved
    exactly by the simplex method. Returns (rule over all tau, minimax prior, value).

    Standard form, with t = t' + g_min (g_min the smallest gain, so t' >= 0):
        sum_{o,y} A[a,o] w(a,y) q[o,y] - t' - s_a = g_min   for every relevant x-orbit a
        sum_y q[o,y] = 1                                   for every tau-orbit o
    maximise t'. Start: q[o, 0] = 1 (accuracy w(x, 0) at every x, as the rows of P sum to
    1), t' at the smallest of those, the other slacks basic. The prior is the dual of the
    a-rows: rho_a = -(reduced cost of s_a).
    """
    n, m = gain.num.shape
    k = n.bit_length() - 1
    mask = _relevant(k, party, bit)
    r = orbits.count
    x_orbits = [a for a in range(r) if mask is None or mask[int(orbits.reps[a])]]
    ind = np.zeros((n, r), dtype=object)
    ind[np.arange(n), orbits.ids] = 1
    A = rr_apply(lambdas, Scaled(ind, 1))  # A[x, o] = sum_{tau in o} P[x, tau]
    g = [[Fraction(int(v), gain.den) for v in gain.num[int(orbits.reps[a])]] for a in x_orbits]
    gmin = min(min(row) for row in g)
    nq = r * m
    width = nq + 1 + len(x_orbits)
    rows, rhs = [], []
    for i, a in enumerate(x_orbits):
        x = int(orbits.reps[a])
        row = [Fraction(0)] * width
        for o in range(r):
            coef = Fraction(int(A.num[x, o]), A.den)
            for y in range(m):
                row[o * m + y] = coef * g[i][y]
        row[nq] = Fraction(-1)
        row[nq + 1 + i] = Fraction(-1)
        rows.append(row)
        rhs.append(gmin)
    for o in range(r):
        row = [Fraction(0)] * width
        for y in range(m):
            row[o * m + y] = Fraction(1)
        rows.append(row)
        rhs.append(Fraction(1))
    cost = [Fraction(0)] * width
    cost[nq] = Fraction(1)
    worst = min(range(len(x_orbits)), key=lambda i: g[i][0])
    start = [(len(x_orbits) + o, o * m) for o in range(r)]
    start += [(i, nq + 1 + i) for i in range(len(x_orbits)) if i != worst]
    start.append((worst, nq))
    z, reduced, optimum = simplex_max(rows, rhs, cost, start)
    rule_rows = [[from_fmpq(z[o * m + y]) for y in range(m)] for o in range(r)]
    rho = [-from_fmpq(reduced[nq + 1 + i]) for i in range(len(x_orbits))]
    prior = [Fraction(0)] * n
    members = _members(orbits)
    for weight, a in zip(rho, x_orbits):
        for x in members[a]:
            prior[x] = weight / int(orbits.sizes[a])
    return _lift_rule(orbits, rule_rows), prior, from_fmpq(optimum) + gmin


def _close(value: Fraction, bound: Fraction, exact: bool) -> bool:
    if exact:
        return value == bound
    return bound - value <= BRACKET_TOLERANCE * (1 + abs(value))


def _best_prior(upper, gain: Scaled, party: int, bit, orbits: Orbits, hint: WorstHint,
                value: Fraction | None, exact_lambdas: bool):
    """Candidate priors, cheapest first, until one meets the rule's value: the uniform prior
    on the sub-problem (XOR-like problems), the hint's support with near-ties, then with
    exact ties only. Returns ((bound, prior, mu) with the smallest bound, reason)."""
    n = gain.num.shape[0]
    relevant = _relevant(n.bit_length() - 1, party, bit)
    found = None
    why = ""
    for attempt in ("uniform", "near-ties", "ties"):
        prior: list[Fraction] | None
        if attempt == "uniform":
            prior = uniform_prior(n, relevant)
        else:
            prior, why = exact_worst_prior(upper, gain, party, bit, orbits, hint,
                                           near_ties=attempt == "near-ties")
        if prior is not None:
            mu, bound = upper_from_prior(upper, gain, party, prior)
            if found is None or bound < found[0]:
                found = (bound, prior, mu)
            if value is not None and _close(value, bound, exact_lambdas):
                break
    return found, why


def _exact_subproblem(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits):
    """The exact simplex: the rule at the lower lambdas, the prior at the upper ones."""
    rule, prior, _ = exact_worst_lp(lower, gain, party, bit, orbits)
    if tuple(upper) != tuple(lower):
        prior = exact_worst_lp(upper, gain, party, bit, orbits)[1]
    mu, bound = upper_from_prior(upper, gain, party, prior)
    return rule, (bound, prior, mu)


def relevant_orbit_count(orbits: Orbits, party: int, bit: int | None) -> int:
    k = int(orbits.ids.size).bit_length() - 1
    mask = _relevant(k, party, bit)
    return orbits.count if mask is None else int(np.count_nonzero(mask[orbits.reps]))


def _worst_subproblem(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits,
                      hint: WorstHint | None, exact_lambdas: bool):
    """One sub-problem (observer, or a party's own bit): (rule, (bound, prior, mu), notes)."""
    n, m = gain.num.shape
    k = n.bit_length() - 1
    where = "" if bit is None else f" (own bit {bit})"
    if hint is None:  # no float hint (the hint LP failed): the exact simplex directly
        rule, found = _exact_subproblem(lower, upper, gain, party, bit, orbits)
        return rule, found, []
    rule, why_rule = exact_worst_rule(lower, gain, party, bit, orbits, hint)
    value = None
    if rule is not None:
        value = rule_value(lower, gain, party, _for_accuracy(rule, party), True,
                           _relevant(k, party, bit))
    found, why_prior = _best_prior(upper, gain, party, bit, orbits, hint, value, exact_lambdas)
    if value is not None and _close(value, found[0], exact_lambdas):
        return rule, found, []
    if exact_lp_size(orbits, m, len(hint.x_orbits)) <= MAX_EXACT_TABLEAU:
        rule, found = _exact_subproblem(lower, upper, gain, party, bit, orbits)
        return rule, found, []
    notes = []
    if rule is None:
        notes.append(f"exact rule{where}: {why_rule}; the rationalised float rule is used")
        rule = rationalised_rule(orbits, hint.rule)
    fallback = rationalised_prior(orbits, hint, n)
    if fallback is not None:
        mu, bound = upper_from_prior(upper, gain, party, fallback)
        if bound < found[0]:
            found = (bound, fallback, mu)
    notes.append(f"exact prior{where}: {why_prior or 'not tight'}; the best of the uniform "
                 "and the rationalised float prior is used")
    return rule, found, notes


def worst_certificate(agent: str, outputs, gain_exact, party: int,
                      lower: Sequence[Fraction], upper: Sequence[Fraction],
                      exact_lambdas: bool, orbits: Orbits,
                      hints: dict) -> Certificate:
    """The worst-case certificate (`hints[None]` for the observer, `hints[0]`, `hints[1]` for
    a party's own bits: float LP solutions, or None to solve exactly without a hint).

    Per sub-problem: the fast path recovers an exact rule at the lower lambdas and an exact
    prior at the upper lambdas from the hints; if they do not meet (value == bound, or
    within 1e-12 relative for a bracket) and the LP is small enough, the sub-problem's LP
    is solved exactly by the simplex method instead; failing both, the rationalised hints
    (a valid, weaker certificate: status `bracket`) with a note. A party's worst case is
    the minimum over its own bits (KOV eq. 6), and a prior on one own bit's inputs is a
    prior on all inputs: the smallest bound is kept.
    """
    gain = Scaled.from_fractions(gain_exact)
    bits = [None] if party == 0 else [0, 1]
    notes: list[str] = []
    rules = {}
    found = []
    for b in bits:
        rule, candidate, more = _worst_subproblem(lower, upper, gain, party, b, orbits,
                                                  hints[b], exact_lambdas)
        rules[b] = rule
        notes.extend(more)
        found.append(candidate)
    bound, prior, mu = min(found, key=lambda c: c[0])  # the smallest valid bound
    decision = tuple(tuple(r) for r in rules[None]) if party == 0 else \
        tuple(tuple(tuple(r) for r in rules[b]) for b in (0, 1))
    value = rule_value(lower, gain, party, decision, worst=True)
    return _finish(agent, "worst", outputs, gain_exact, gain, party, lower, upper, prior, mu,
                   bound, decision, value, exact_lambdas, uniform=False, notes=tuple(notes))
