"""Count queries under (epsilon, delta)-DP (docs/theory.md, "Approximate privacy", count
queries): the consumer's optimal (epsilon, delta)-DP mechanism, an LP, against the
geometric mechanism at the same epsilon with its best post-processing (as for pure
privacy: verifiers/count/verifier.py).

The LP (minimisation; alpha = e^-epsilon; theory/approx/count.py):

    x[i, r] >= 0, sum_r x[i, r] = 1                          every answer i
    s[p, r] >= alpha x[i, r] - x[j, r],  s[p, r] >= 0         every ordered adjacent pair
    sum_r s[p, r] <= alpha delta                              p = (i -> j), released r
    minimax: minimise t, sum_r l(i, r) x[i, r] <= t for i in S;
    Bayes:   minimise sum_i p_i sum_r l(i, r) x[i, r].

At delta = 0 it is GS's LP (every s = 0). Its optimum is bracketed rigorously, as the pure
LP's: weak duality below (every slack lies in [0, alpha delta] on every feasible point),
and above by the loss of its solution made exactly (epsilon, delta)-DP (mixed with the
uniform mechanism; exact at lambda_lo <= e^epsilon, so at e^epsilon too). The geometric
mechanism is epsilon-DP, so (epsilon, delta)-DP: its loss is at least the optimum.

Verdicts, as for count problems: `optimal` when the geometric mechanism attains the
(epsilon, delta) optimum within --tol (nothing gains from delta for this consumer); `gap`
when an exactly (epsilon, delta)-DP mechanism (the LP's, repaired) beats it by more than
--tol, proved exactly against the geometric mechanism's exact lower bound; `error` when
the brackets cannot tell. The result's `best` says which mechanism is best known.

**derive** (`delta_derivation`): for a mechanism file that claims (epsilon, delta),
"serves every consumer" is decided for the consumers of two adjacent answers (side
information {i, i + 1}, any loss, minimax or Bayes), exactly: their optimum over every
(epsilon, delta)-DP mechanism is RR(epsilon, delta)'s on one bit (KOV-C 2015, Theorem 2.5;
the other rows copied from i and i + 1 spend nothing), so the mechanism serves them all
exactly when its rows i, i + 1 dominate RR(epsilon, delta), i.e. when its tradeoff
function lies below RR's (theory/approx/count.py). For n = 1 that is every consumer. For
n >= 2 consumers of more answers are not covered: whether one (epsilon, delta) mechanism
serves every consumer there is not decided by `derive`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.lp import LinearProgram
from dpverify.lp.builder import LpBuilder
from dpverify.records import record
from dpverify.spec.count_model import CountSpec, MechanismSpec
from dpverify.theory.approx.count import (
    adjacent_pairs,
    mechanism_delta,
    mix_to_delta,
    rr_kinks,
    rr_tradeoff,
    tradeoff,
)
from dpverify.theory.count.exact import geometric_lower, geometric_lower_bound, mechanism_loss
from dpverify.theory.count.geometric import bayes_loss, minimax_loss
from dpverify.theory.exact import exp_bracket
from dpverify.theory.exact_rows import clean_stochastic, exact_distribution, exact_stochastic
from dpverify.theory.units import Units


def delta_lp_nonzeros(n: int, minimax: bool, side: int) -> int:
    """The LP's non-zeros, before it is built."""
    N = n + 1
    pairs = 2 * n
    return N * N + pairs * N * 4 + (side * (N + 1) if minimax else 0)


def delta_mechanism_lp(loss: np.ndarray, alpha: float, delta: float, side: Sequence[int],
                       prior: np.ndarray | None = None) -> tuple[LinearProgram, int]:
    """The LP of the module docstring; columns x (N * N, row-major), then the slacks
    (2n * N, pair by pair), then t (minimax). Returns the LP and the number of slacks.
    The minimax loss rows come last (their duals are the least favourable prior)."""
    N = loss.shape[0]
    nx = N * N
    minimax = prior is None
    b = LpBuilder()
    x = b.add_cols(nx, cost=0.0 if minimax else (np.asarray(prior)[:, None] * loss).ravel())
    rows = b.add_rows(N, 1.0, 1.0)
    b.add(np.repeat(rows, N), x, 1.0)
    pairs = adjacent_pairs(N - 1) if alpha > 0 else []
    slack = b.add_cols(len(pairs) * N, cost=0.0)
    for p, (i, j) in enumerate(pairs):
        s = slack[p * N:(p + 1) * N]
        link = b.add_rows(N, 0.0, np.inf)  # s - alpha x[i, r] + x[j, r] >= 0
        b.add(link, s, 1.0)
        b.add(link, x[i * N:(i + 1) * N], -alpha)
        b.add(link, x[j * N:(j + 1) * N], 1.0)
        budget = b.add_rows(1, -np.inf, alpha * delta)
        b.add(np.repeat(budget, N), s, 1.0)
    if minimax:
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        S = np.asarray(side, dtype=np.int64)
        loss_rows = b.add_rows(S.size, -np.inf, 0.0)  # sum_r l(i, r) x[i, r] - t <= 0
        for k, i in enumerate(S.tolist()):
            b.add(np.repeat(loss_rows[k:k + 1], N), x[i * N:(i + 1) * N], loss[i])
        b.add(loss_rows, np.repeat(t, S.size), -1.0)
    lp = b.build(maximize=False, name="count-mechanism-delta", drop_tiny=True)
    return lp, len(pairs) * N


def repaired(x: np.ndarray, alpha: float, delta: float) -> np.ndarray:
    """A float solution made a distribution per row and (about) (epsilon, delta)-DP: mixed
    with the uniform mechanism by 1 - delta / HS when its largest hockey-stick sum HS
    exceeds delta (floats; the exact repair is `exact_delta_mechanism`)."""
    x = clean_stochastic(x)
    if alpha == 0 or x.shape[0] == 1:
        return x
    lam = 1.0 / alpha
    spent = max(float(np.clip(x[i] - lam * x[j], 0.0, None).sum())
                for i, j in adjacent_pairs(x.shape[0] - 1))
    if spent <= delta:
        return x
    t = min(1.0, 1.0 - delta / spent + 1e-15)
    return (1 - t) * x + t / x.shape[1]


def float_upper(x: np.ndarray, loss: np.ndarray, alpha: float, delta: float, side,
                prior: np.ndarray | None) -> float:
    """The loss of the repaired solution (normalised units)."""
    y = repaired(x, alpha, delta)
    return float(minimax_loss(y, loss, side) if prior is None else bayes_loss(y, loss, prior))


def exact_delta_mechanism(x: np.ndarray, lam_lo: Fraction | None, delta: Fraction
                          ) -> list[list[Fraction]]:
    """The LP's mechanism made an exact (epsilon, delta)-DP mechanism at lam_lo <=
    e^epsilon (None: alpha = 0, no privacy, nothing to repair)."""
    rows = exact_stochastic(x)
    if lam_lo is None:
        return rows
    return mix_to_delta(rows, lam_lo, delta)[0]


def confirm_gap(spec: CountSpec, exact_loss: np.ndarray, units: Units, x: np.ndarray,
                weights: np.ndarray, alphas: tuple[Fraction, Fraction], relevant: list[int],
                tol: float) -> tuple[bool, Fraction, Fraction]:
    """A float gap proved exactly: an exactly (epsilon, delta)-DP mechanism's loss (upper)
    against the geometric mechanism's exact lower bound with any post-processing (lower),
    user units; (proved, lower, upper)."""
    alpha_lo, alpha_hi = alphas
    lam_lo = None if alpha_hi == 0 else 1 / alpha_hi
    loss = [[Fraction(v) for v in row] for row in exact_loss]
    mech = exact_delta_mechanism(x, lam_lo, spec.delta)
    prior = None if spec.prior is None else list(spec.prior)
    upper = mechanism_loss(mech, loss, spec.side_information, prior)
    q = prior if prior is not None else exact_distribution(weights, spec.side_information)
    unit = [row if i in relevant else (Fraction(0),) * len(row)
            for i, row in enumerate(units.exact)]
    lower = units.to_user(geometric_lower_bound(geometric_lower(alpha_lo, alpha_hi, spec.n),
                                                unit, q))
    return lower - upper > units.tolerance(tol), lower, upper


# -- derive with delta -----------------------------------------------------------------------
@record
class PairTest:
    """Adjacent answers i, j = i + 1 of a mechanism against RR(epsilon, delta): whether its
    two rows dominate it (`serves`; None: undecided at an irrational level), and where it
    was decided: the type-I error `a`, the mechanism's least type-II error `f` there and
    RR's `f_rr` (at the lower bracket of lambda when it fails, the upper when it holds)."""

    i: int
    j: int
    serves: bool | None
    a: Fraction
    f: Fraction
    f_rr: Fraction


@record(eq=False)
class DeltaDerivation:
    """`dpverify derive` on a mechanism file that claims (epsilon, delta) with delta > 0
    (docs/theory.md, "Approximate privacy", count queries): its achieved delta at the
    claimed epsilon (an exact bracket [lower, upper]) and whether that meets the claim
    (`private`; None: undecided), and for every pair of adjacent answers whether it
    serves every consumer of those two answers (`pairs`)."""

    delta: Fraction
    achieved: tuple[Fraction, Fraction]
    private: bool | None
    pairs: tuple[PairTest, ...]
    exact: bool
    tol: float

    @property
    def serves(self) -> bool | None:
        """Every pair served (None when some pair is undecided and none fails)."""
        if any(p.serves is False for p in self.pairs):
            return False
        return None if any(p.serves is None for p in self.pairs) else True

    @property
    def derivable(self) -> bool | None:
        """The answer `derive` gives: True when the mechanism is (epsilon, delta)-DP and
        serves every consumer of two adjacent answers; False when it is not private or
        fails a pair; None when undecided."""
        if self.private is False or self.serves is False:
            return False
        if self.private is None or self.serves is None:
            return None
        return True


def _lambda_bracket(mech: MechanismSpec) -> tuple[Fraction, Fraction] | None:
    """lambda_lo <= e^epsilon <= lambda_hi from alpha (exact) or epsilon; None: alpha = 0."""
    if mech.alpha_exact is not None:
        return None if mech.alpha_exact == 0 else (1 / mech.alpha_exact, 1 / mech.alpha_exact)
    assert mech.epsilon_exact is not None
    return exp_bracket(mech.epsilon_exact)


def _pair(x: list[list[Fraction]], i: int, levels: tuple[Fraction, Fraction] | None,
          delta: Fraction, slack: Fraction) -> PairTest:
    if levels is None:  # no privacy: RR reveals the answer, f_RR = 0
        f = tradeoff(x[i], x[i + 1], Fraction(0))
        return PairTest(i, i + 1, f <= slack, Fraction(0), f, Fraction(0))
    lo, hi = levels
    for a in rr_kinks(lo, delta):  # a failure against RR at lambda_lo fails at lambda too
        f, bound = tradeoff(x[i], x[i + 1], a), rr_tradeoff(lo, delta, a)
        if f > bound + slack:
            return PairTest(i, i + 1, False, a, f, bound)
    last = None
    for a in rr_kinks(hi, delta):  # holding against RR at lambda_hi holds at lambda
        f, bound = tradeoff(x[i], x[i + 1], a), rr_tradeoff(hi, delta, a)
        last = (a, f, bound)
        if f > bound + slack:
            return PairTest(i, i + 1, None, a, f, bound)
    assert last is not None
    return PairTest(i, i + 1, True, *last)


def delta_derivation(mech: MechanismSpec, tol: float = 1e-9) -> DeltaDerivation:
    """The answer of `derive` for a mechanism claiming (epsilon, delta) (DeltaDerivation):
    exact on the matrix's values (TOML floats as their binary values, rows divided by their
    exact sums, the claims then met within `tol`)."""
    x = [[Fraction(v) for v in row] for row in mech.matrix]
    if mech.float_entries:
        x = [[v / sum(row, Fraction(0)) for v in row] for row in x]
    slack = Fraction(tol) if mech.float_entries else Fraction(0)
    levels = _lambda_bracket(mech)
    if levels is None:
        achieved = (Fraction(0), Fraction(0))
    else:
        achieved = (Fraction(mechanism_delta(x, levels[1])),
                    Fraction(mechanism_delta(x, levels[0])))
    line = mech.delta + slack
    private = True if achieved[1] <= line else False if achieved[0] > line else None
    pairs = tuple(_pair(x, i, levels, mech.delta, slack) for i in range(mech.n))
    return DeltaDerivation(mech.delta, achieved, private, pairs, not mech.float_entries, tol)
