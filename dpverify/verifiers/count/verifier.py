"""The count-query verifier: is the geometric mechanism universally optimal?

Gupte-Sundararajan (GS, PODS 2010, Theorem 1) for minimax consumers and Ghosh-Roughgarden-
Sundararajan (GRS, STOC 2009) for Bayesian consumers (theory.md section 2). Two sides per
problem, and `optimal` only when a proven lower bound on the first meets the second within
the tolerance:

* the candidate: the geometric mechanism G followed by the consumer's best post-processing
  (minimax: an LP over randomised T, GS section 4.2; Bayes: the best deterministic remap,
  computed directly, GRS), evaluated on the mechanism G T it induces (`geometric_value`);
* the optimal alpha-DP oblivious mechanism for the consumer (`mechanism_optimum`: the least
  loss any alpha-DP mechanism can have), bounded below first by the candidate's own dual
  certificate, checked on the whole DP cone in safely rounded floats (`_certificate_side`;
  a proof by weak duality, whatever produced it), and otherwise (or with --method lp) by
  its LP over x[i, r] with rigorous brackets, an independent computation.

Losses are minimised, so `gap = geometric_value - mechanism_optimum >= 0` up to rounding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify import clock
from dpverify.defaults import LpForm, Method
from dpverify.errors import SizeLimitError
from dpverify.lp import LinearProgram, LpSolution
from dpverify.lp.highs import SMALL_MATRIX_VALUE
from dpverify.policy import (
    BYTES_PER_NONZERO,
    COUNT_BAND,
    COUNT_BAND_FROM_N,
    COUNT_GENERATION_ROUNDS,
    COUNT_LP_SECONDS,
    COUNT_MAX_BYTES,
    COUNT_PRIOR_ROWS,
)
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.count_model import CountSpec
from dpverify.spec.losses import loss_table
from dpverify.spec.numbers import rational_text
from dpverify.spec.setting import Setting
from dpverify.theory.count.bounds import (
    chain_bound_below,
    chain_dual_bound,
    column_costs_ok,
    float_bounds,
    interval_products,
)
from dpverify.theory.count.exact import (
    exact_dp_mechanism,
    geometric_lower,
    geometric_lower_bound,
    is_exactly_dp,
    mechanism_loss,
)
from dpverify.theory.count.geometric import (
    bayes_loss,
    bayes_remap,
    geometric_inverse,
    geometric_matrix,
    minimax_loss,
    monotonicity_violation,
)
from dpverify.theory.exact import exp_bracket
from dpverify.theory.exact_rows import (
    clean_distribution,
    clean_stochastic,
    exact_distribution,
    exact_total,
    has_mass,
)
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.count.approximate import (
    confirm_gap,
    delta_lp_nonzeros,
    delta_mechanism_lp,
    float_upper,
)
from dpverify.verifiers.count.lps import (
    ColumnGroups,
    PostProcessing,
    best_post_processing,
    dual_lower_bound,
    geometric_bound,
    mechanism_lp,
    post_processing_lp,
    repaired_mechanism,
    t_range,
)
from dpverify.verifiers.count.result import CountResult
from dpverify.verifiers.options import VerifyOptions, check_limit, lp_form, show_bytes
from dpverify.verifiers.progress import stage
from dpverify.verifiers.result import Bracket, ProblemResult, Verdict

# --------------------------------------------------------------------------------------
# Sizes


def estimate_nonzeros(spec: CountSpec, options: VerifyOptions) -> int:
    """Non-zeros of the optimal-mechanism LP, the LP the verifier builds when the
    candidate's certificate does not decide, computed without building. The best
    post-processing is found through LPs over priors whose rows are generated (|S| + 1
    non-zeros each), kept within the size guard as they grow (`prior_rows`); the direct LP
    over T is only a fallback (`post_processing_nonzeros`)."""
    return SIDES[spec.setting].nonzeros(spec)


# The memory of one exact rational entry of the loss's tables (a Fraction and its list
# slot; tracemalloc at n = 200: the loss's table and its normalised units together hold
# 120 bytes an entry for abs and min(|i - r|, 5), 195 for square, at peak 210 and 290),
# how many such tables of (n + 1)^2 entries a count problem holds at once (the loss's,
# its normalised units, the certificate's costs), and its float (n + 1)^2 arrays (G, the
# loss, its units, G T, T and the optimal mechanism)
EXACT_ENTRY_BYTES = 150
EXACT_TABLES = 3
FLOAT_TABLES = 6


def estimate_bytes(spec: CountSpec, options: VerifyOptions) -> int:
    """The memory a count problem needs at most (the guard of `check_size`; tracemalloc's
    peak at n = 200 is 50 to 75% of it without the prior LP's term, 35 to 50% with it):
    its exact and float tables, the minimax consumer's products G[i, k] l(i, r) over i in
    S and the least favourable prior's LP at its most rows (count/lps.py,
    best_post_processing), and the larger of its other LPs (the optimal-mechanism LP, the
    direct post-processing LP)."""
    N = spec.n + 1
    s = len(spec.side_information)
    tables = N * N * (EXACT_TABLES * EXACT_ENTRY_BYTES + FLOAT_TABLES * 8)
    minimax = spec.model != "bayes"
    products = 8 * s * N * N + prior_rows(spec, options) * (s + 1) * BYTES_PER_NONZERO \
        if minimax else 0
    lp = max(estimate_nonzeros(spec, options),
             post_processing_nonzeros(spec, options) if minimax else 0)
    return tables + products + lp * BYTES_PER_NONZERO


def memory_limit(options: VerifyOptions) -> int:
    """The memory a count problem may take (policy.COUNT_MAX_BYTES; a larger --max-nonzeros
    allows its non-zeros' worth, at policy.BYTES_PER_NONZERO each)."""
    given = 0 if options.max_nonzeros is None else options.max_nonzeros * BYTES_PER_NONZERO
    return max(COUNT_MAX_BYTES, given)


def prior_rows(spec: CountSpec, options: VerifyOptions) -> int:
    """The most rows the least favourable prior's LP may grow to (counted in
    `estimate_bytes`): policy.COUNT_PRIOR_ROWS per answer, and within --max-nonzeros when
    it is given."""
    rows = COUNT_PRIOR_ROWS * (spec.n + 1)
    if options.max_nonzeros is not None:
        return max(1, min(rows, options.max_nonzeros // (len(spec.side_information) + 1)))
    return rows


def _pure_nonzeros(spec: CountSpec) -> int:
    N, s = spec.n + 1, len(spec.side_information)
    mechanism = N * N + (4 * spec.n * N if spec.alpha > 0 else 0)
    if spec.model == "bayes":
        return mechanism
    return mechanism + s * (N + 1)


def _delta_nonzeros(spec: CountSpec) -> int:
    """The (epsilon, delta) LP (verifiers/count/approximate.py)."""
    return delta_lp_nonzeros(spec.n, spec.model != "bayes", len(spec.side_information))


def post_processing_nonzeros(spec: CountSpec, options: VerifyOptions) -> int:
    """Non-zeros of the direct post-processing LP (count_lps.post_processing_lp)."""
    N, s = spec.n + 1, len(spec.side_information)
    if lp_form(options) == LpForm.DENSE:
        return N * N + s * (N * N + 1)
    return 7 * N * N + s * (3 * N + 1)


def check_size(spec: CountSpec, options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) before building anything too large (the rule of
    policy.py, COUNT_MAX_BYTES): with --max-nonzeros given, the optimal-mechanism LP above
    it, as every kind's LPs; always, an estimated memory above `memory_limit`. (The
    optimal-mechanism LP's time is checked before it is built: `check_time`.)"""
    nonzeros = estimate_nonzeros(spec, options)
    if options.max_nonzeros is not None:
        check_limit(spec.source, nonzeros, options, f"n = {spec.n}")
    need, limit = estimate_bytes(spec, options), memory_limit(options)
    if need > limit:
        raise SizeLimitError(
            f"{spec.source}: too large: n = {spec.n} needs about {show_bytes(need)} of "
            f"memory; the limit is {show_bytes(limit)} (raise it with --max-nonzeros, "
            f"{BYTES_PER_NONZERO} bytes a non-zero)")
    return nonzeros


def lp_seconds(nonzeros: int) -> float:
    """The optimal-mechanism LP's time, estimated from its size (policy.COUNT_LP_SECONDS)."""
    return COUNT_LP_SECONDS * (nonzeros / 1e5) ** 2.5


def check_time(spec: CountSpec, side: CountSide) -> None:
    """Refuse (SizeLimitError, exit 3) the optimal-mechanism LP when its estimated time
    exceeds the time left in the run (--timeout; dpverify/clock.py), before building it."""
    left = clock.current().remaining()
    nonzeros = side.nonzeros(spec)
    seconds = lp_seconds(nonzeros)
    if left is not None and seconds > left:
        raise SizeLimitError(
            f"{spec.source}: the optimal-mechanism LP (about {nonzeros:.3g} non-zeros, "
            f"n = {spec.n}) needs about {seconds:.3g} s, and the run has {left:.3g} s left "
            "(raise it with --timeout)")


# --------------------------------------------------------------------------------------
# The verifier


# HiGHS's default feasibility tolerance (1e-7) is coarser than the smallest entries of G
# when alpha^n is small; the count LPs are small, so they are always solved tightly.
FEASIBILITY_TOL = 1e-10


def _solve(lp: LinearProgram, options: VerifyOptions) -> LpSolution:
    return options.solver().tight(FEASIBILITY_TOL)(lp)


@record
class _Bracket:
    """One side's loss, in the normalised units of the consumer's loss: `lower <= truth <=
    upper` rigorously (up to float rounding of sums of non-negative terms), and `value`,
    the number shown (the mechanism LP's optimum; the geometric mechanism's upper end)."""

    lower: float
    upper: float
    value: float


@record
class _Sides:
    mechanism: _Bracket
    geometric: _Bracket
    x: np.ndarray  # an optimal alpha-DP mechanism (floats)
    T: np.ndarray  # the geometric mechanism's post-processing
    weights: np.ndarray  # minimax: a distribution on S for the geometric lower bound


def _undecided(what: str, sol: LpSolution) -> str:
    return (f"undecided: the {what} LP could not be solved (the solver stopped: "
            f"{sol.status.value})")


def _pure_note(verdict: Verdict, violation: tuple[int, int] | None, spec: CountSpec) -> str:
    return _note(verdict, violation, spec.model)


def _note(verdict: Verdict, violation: tuple[int, int] | None, model: str) -> str:
    theorem = ("Gupte-Sundararajan Theorem 1" if model == "minimax"
               else "Ghosh-Roughgarden-Sundararajan")
    if violation is None:
        if verdict is Verdict.GAP:
            return (f"CONTRADICTS {theorem}: the loss is monotone in |i - r|, so the "
                    "geometric mechanism should be optimal; this is a bug or a numerical "
                    "failure, please report it")
        return ""
    i, r = violation
    why = (f"the loss is not monotone in |i - r| (l({i}, {r}) is smaller than its "
           f"neighbour nearer to {i}), so {theorem} does not apply")
    if verdict is Verdict.GAP:
        return f"gap expected: {why}"
    if verdict is Verdict.OPTIMAL:
        return f"{why}; the geometric mechanism is optimal here anyway"
    return ""


def verify_count(spec: CountSpec, options: VerifyOptions) -> ProblemResult:
    """Verify one count problem: one result (the consumer), by the mechanism side of its
    setting (SIDES: pure alpha-DP, or (epsilon, delta): docs/theory.md, "Approximate
    privacy")."""
    check_size(spec, options)
    stage(spec.name, "consumer", spec.model.value, Method.LP)
    result = _verify_consumer(spec, options, SIDES[spec.setting])
    return ProblemResult(spec.name, spec.source, spec.kind, (result,), spec.header(),
                         setting=spec.setting)


def loss_units(spec: CountSpec) -> Units:
    """The loss normalised (theory/units.py): l = lo + span l', with lo and span over the
    rows that matter (S for minimax; the prior's support for Bayes), so no decision depends
    on the scale of the loss (the tolerance is relative to its range); every row mapped."""
    return units_of(list(loss_table(spec)), rows=relevant_rows(spec))


def relevant_rows(spec: CountSpec) -> list[int]:
    if spec.prior is None:
        return list(spec.side_information)
    return [i for i, p in enumerate(spec.prior) if p > 0]


MechanismSide = tuple[_Bracket, np.ndarray, np.ndarray | None] | str


def _mechanism_side(loss: np.ndarray, exact_unit: Sequence[Sequence[Fraction]], spec: CountSpec,
                    prior: np.ndarray | None, options: VerifyOptions) -> MechanismSide:
    """The optimal alpha-DP mechanism (an LP), bracketed by weak duality below and by the
    loss of its solution repaired to be exactly feasible above."""
    N, side, alpha = spec.n + 1, spec.side_information, spec.alpha
    lp = mechanism_lp(loss, alpha, side, prior)
    sol = _solve(lp, options)
    if not sol.optimal:
        return _undecided("optimal-mechanism", sol)
    x = sol.x[:N * N].reshape(N, N)
    groups = ColumnGroups(((0, N, True),), ((N * N, *t_range(loss, side)),)
                          if prior is None else ())
    repaired = repaired_mechanism(x, alpha)
    upper = float(minimax_loss(repaired, loss, side) if prior is None
                  else bayes_loss(repaired, loss, prior))
    q = _least_favourable(spec, sol)
    lower = max(dual_lower_bound(lp, sol, groups), _chain_bound(spec, sol, q, exact_unit))
    return _Bracket(min(lower, upper), upper, sol.objective), x, q


def _delta_mechanism_side(loss: np.ndarray, exact_unit: Sequence[Sequence[Fraction]],
                          spec: CountSpec, prior: np.ndarray | None, options: VerifyOptions
                          ) -> MechanismSide:
    """The optimal (epsilon, delta)-DP mechanism (verifiers/count/approximate.py),
    bracketed by weak duality below (the slacks lie in [0, alpha delta]) and by the loss of
    its solution made (epsilon, delta)-DP above."""
    N, side, alpha, delta = spec.n + 1, spec.side_information, spec.alpha, float(spec.delta)
    lp, slacks = delta_mechanism_lp(loss, alpha, delta, side, prior)
    sol = _solve(lp, options)
    if not sol.optimal:
        return _undecided("optimal (epsilon, delta) mechanism", sol)
    x = sol.x[:N * N].reshape(N, N)
    scalars = tuple((N * N + k, 0.0, alpha * delta) for k in range(slacks))
    if prior is None:
        scalars += ((N * N + slacks, *t_range(loss, side)),)
    lower = dual_lower_bound(lp, sol, ColumnGroups(((0, N, True),), scalars))
    upper = float_upper(x, loss, alpha, delta, side, prior)
    return _Bracket(min(lower, upper), upper, sol.objective), x, _least_favourable(spec, sol)


def _least_favourable(spec: CountSpec, sol: LpSolution) -> np.ndarray | None:
    """The minimax consumer's least favourable prior on 0..n, from the mechanism LP's duals
    of its loss rows (the last |S| rows), as far as the solver knows; None for Bayes."""
    if spec.prior is not None:
        return None
    side = list(spec.side_information)
    raw = np.clip(-np.asarray(sol.row_duals[-len(side):], dtype=np.float64), 0.0, None)
    q = np.zeros(spec.n + 1)
    q[side] = raw
    return q


def _chain_bound(spec: CountSpec, sol: LpSolution, q_float: np.ndarray | None,
                 exact_unit: Sequence[Sequence[Fraction]]) -> float:
    """The rigorous lower bound of theory/count/bounds.py from the mechanism LP's duals:
    q (the least favourable prior, minimax; the prior, Bayes) and nu from the row sums (the
    first N rows)."""
    duals = np.asarray(sol.row_duals[:spec.n + 1], dtype=np.float64)
    return certified_bound(spec, q_float, duals, exact_unit)


def certified_bound(spec: CountSpec, q_float: np.ndarray | None, nu_float: np.ndarray,
                    exact_unit: Sequence[Sequence[Fraction]]) -> float:
    """The chain bound (theory/count/bounds.py) of float multipliers: q (a distribution on
    S, minimax; None: the prior, Bayes) and nu of the row sums, repaired and checked
    exactly at alpha_lo <= alpha (the DP cone only grows as alpha falls, so the bound
    holds at alpha); -inf when they are not usable. Valid whatever q and nu are (weak
    duality): how good it is depends on them."""
    N = spec.n + 1
    if not np.isfinite(nu_float).all():
        return -math.inf
    total = Fraction(1)
    if q_float is not None:
        if not has_mass(q_float):
            return -math.inf
        # q and nu scale together (an LP dual): both divided by q's exact total, so that q
        # sums to exactly 1 (the bound holds for sum q <= 1)
        q, total = exact_distribution(q_float), exact_total(q_float)
    else:
        q = list(spec.prior or ())
    nu = [Fraction(v) / total for v in nu_float.tolist()]
    costs = [[q[i] * v for v in exact_unit[i]] if q[i] else [Fraction(0)] * N
             for i in range(N)]
    bound, repaired = chain_dual_bound(costs, nu, _alpha_bracket(spec)[0])
    if not column_costs_ok(costs, repaired, _alpha_bracket(spec)[0]):  # cannot happen
        return -math.inf
    return math.nextafter(float(bound), -math.inf)


def candidate_bound(spec: CountSpec, q_float: np.ndarray | None, nu: np.ndarray,
                    exact_unit: Sequence[Sequence[Fraction]]) -> float:
    """certified_bound in floats, rigorous by directed rounding (theory/count/bounds.py,
    chain_bound_below): minimax, q made a sub-distribution rounded down (the minimax loss
    is at least any such weighted mean of the non-negative normalised losses); Bayes, the
    prior within floats; the costs q_i l(i, r) as float intervals around the exact ones;
    alpha rounded down from alpha_lo. -inf where it does not apply (alpha 0 or 1)."""
    l_lo, l_hi = float_bounds(exact_unit)
    if q_float is None:
        w_lo, w_hi = float_bounds(list(spec.prior or ()))
    else:
        q = np.clip(np.nan_to_num(np.asarray(q_float, dtype=np.float64), nan=0.0, posinf=0.0),
                    0.0, None)
        total = float(np.nextafter(math.fsum(q.tolist()), math.inf))
        if not total > 0:
            return -math.inf
        w_lo = w_hi = np.nextafter(q / total, -math.inf).clip(0.0, None)
    cost_lo, cost_hi = interval_products(w_lo[:, None], w_hi[:, None], l_lo, l_hi)
    alpha = float(np.nextafter(float(_alpha_bracket(spec)[0]), -math.inf))
    return chain_bound_below(cost_lo, cost_hi, nu, alpha)


def _certificate_side(loss: np.ndarray, exact_unit: Sequence[Sequence[Fraction]],
                      spec: CountSpec, prior: np.ndarray | None, G: np.ndarray,
                      geo: tuple[_Bracket, np.ndarray, np.ndarray]) -> MechanismSide | None:
    """The optimal mechanism bracketed without its LP, from the candidate itself: G T is
    an alpha-DP mechanism (post-processing keeps privacy), so its loss bounds the optimum
    above; and with q the candidate's least favourable prior (the prior, Bayes) and
    mu_k = min_r sum_i q_i G[i,k] l(i,r) (the dual of the best post-processing,
    GS section 4.2), nu = G^-T mu are the row-sum multipliers of the full mechanism LP's
    dual whose chain bound (candidate_bound: rigorous floats) is sum(mu) when every column cost is
    non-negative on the DP cone, not only on the cone of G's columns. That is what GS
    Theorem 1 (GRS for Bayes) says happens for a monotone loss; whether it does is checked
    exactly, so the bound holds for any loss. None when G has no inverse (alpha = 1)."""
    if spec.alpha == 1 and spec.n > 0:
        return None
    bracket, T, q = geo
    weights = prior if prior is not None else q
    mu = (G.T @ (weights[:, None] * loss)).min(axis=1)
    nu = geometric_inverse(spec.alpha, spec.n).T @ mu
    lower = candidate_bound(spec, None if prior is not None else q, nu, exact_unit)
    upper = bracket.upper
    lower = min(lower, upper)  # shown: the proven bound (the gap is the certificate's width)
    return _Bracket(lower, upper, lower), G @ T, q


def _geometric_side(loss: np.ndarray, spec: CountSpec, prior: np.ndarray | None, G: np.ndarray,
                    options: VerifyOptions, q_hint: np.ndarray | None = None
                    ) -> tuple[_Bracket, np.ndarray, np.ndarray] | str:
    """G followed by the consumer's best post-processing. Minimax: the best randomised T
    (GS section 4.2), found through the dual LP over priors (count_lps.best_post_processing);
    its value is that of the mechanism G T it induces (so rounding cannot flatter it), and
    the prior q found bounds it from below (geometric_bound). Bayes: the best deterministic
    remap, computed directly (GRS)."""
    N, side = spec.n + 1, spec.side_information
    if prior is not None:
        value, remap = bayes_remap(G, loss, prior)
        T = np.zeros((N, N))
        T[np.arange(N), remap] = 1.0
        return _Bracket(float(value), float(value), float(value)), T, prior
    found = best_post_processing(G, loss, side, lambda lp: _solve(lp, options), q_hint,
                                 patience=None if q_hint is not None
                                 else COUNT_GENERATION_ROUNDS,
                                 max_rows=prior_rows(spec, options),
                                 band=COUNT_BAND if spec.n >= COUNT_BAND_FROM_N else 0,
                                 grow=options.solver().tight(FEASIBILITY_TOL).growing,
                                 need=options.tol / 2)
    if found.T is None or found.q is None:  # the direct LP over T (GS section 4.2) instead
        if options.max_nonzeros is not None \
                and post_processing_nonzeros(spec, options) > options.max_nonzeros:
            return _undecided("post-processing", found.solution)
        lp = post_processing_lp(loss, spec.alpha, side, lp_form(options))
        sol = _solve(lp, options)
        if not sol.optimal:
            return _undecided("post-processing", sol)
        weights = np.zeros(N)
        weights[list(side)] = -np.asarray(sol.row_duals[-len(side):])
        found = PostProcessing(clean_stochastic(sol.x[:N * N].reshape(N, N)),
                               clean_distribution(weights, side), sol)
    assert found.T is not None and found.q is not None
    upper = float(minimax_loss(G @ found.T, loss, side))
    lower = geometric_bound(G, loss, found.q) if found.q.sum() > 0 else 0.0
    return _Bracket(min(lower, upper), upper, upper), found.T, found.q


Geometric = tuple[_Bracket, np.ndarray, np.ndarray] | str


def _both_sides(unit: np.ndarray, exact_unit: Sequence[Sequence[Fraction]], spec: CountSpec,
                prior: np.ndarray | None, G: np.ndarray, options: VerifyOptions,
                side: CountSide) -> tuple[MechanismSide, Geometric | None]:
    """The two sides: the candidate and its own certificate first (pure DP, unless
    --method lp), and the optimal-mechanism LP only when that does not decide (then the
    candidate again, with the LP's least favourable prior as its hint). A string: the
    side's failure (the geometric side is None after a failed mechanism side)."""
    if side.certificate and options.method is not Method.LP:
        geo = _geometric_side(unit, spec, prior, G, options)
        if not isinstance(geo, str):
            mech = _certificate_side(unit, exact_unit, spec, prior, G, geo)
            if mech is not None and _closes(mech, geo, options.tol):
                return mech, geo
    check_time(spec, side)
    mech = side.mechanism(unit, exact_unit, spec, prior, options)
    if isinstance(mech, str):
        return mech, None
    return mech, _geometric_side(unit, spec, prior, G, options, mech[2])


def _verify_consumer(spec: CountSpec, options: VerifyOptions, side: CountSide) -> CountResult:
    start = time.perf_counter()
    exact_loss = loss_table(spec)
    loss = loss_units(spec)
    unit, exact_unit = loss.unit, loss.exact
    violation = monotonicity_violation(exact_loss, rows=spec.side_information)
    hypothesis = "monotone" if violation is None else "not-monotone"
    prior = (None if spec.prior is None
             else np.array([float(p) for p in spec.prior], dtype=np.float64))
    G = geometric_matrix(spec.alpha, spec.n)

    def failed(reason: str, optimum: float | None = None) -> CountResult:
        return CountResult("consumer", spec.model, optimum, None, hypothesis, Verdict.ERROR,
                           time.perf_counter() - start, reason=reason,
                           code=ReasonCode.SOLVER_FAILED)

    def units(v: float) -> float:  # not finite (an infinite bound): as it is
        user = loss.user(v)
        return v if user is None else user

    mech, geo = _both_sides(unit, exact_unit, spec, prior, G, options, side)
    if isinstance(mech, str):
        return failed(mech)
    if geo is None or isinstance(geo, str):
        return failed(geo or "", units(mech[0].value))
    sides = _Sides(mech[0], geo[0], mech[1], geo[1], geo[2])
    verdict, reason, code = decide(sides.mechanism, sides.geometric, options.tol)
    m = sides.mechanism
    if not m.lower - options.tol <= m.value <= m.upper + options.tol:
        verdict, reason, code = Verdict.ERROR, (
            f"the optimal-mechanism LP reports a loss of {units(m.value):.12g}, outside "
            f"[{units(m.lower):.12g}, {units(m.upper):.12g}], which its own duals and "
            "solution prove: it was solved inaccurately"), ReasonCode.NUMERICAL
    if verdict is Verdict.GAP:
        verdict, reason, code = side.confirm(spec, exact_loss, loss, sides, options.tol)
    # the optimal mechanism's loss is reported within its bracket when it decides nothing
    # or when its LP drops alpha (duals and a repaired mechanism: rigorous, in floats)
    bounds = Bracket.of(units(sides.mechanism.lower), units(sides.mechanism.upper))
    shown = False
    if code in (ReasonCode.BRACKET_TOO_WIDE, ReasonCode.BUG):  # undecided: the numbers
        reason += f"; alpha^n = {spec.alpha ** spec.n:.3g}"
        shown = True
    note = side.note(verdict, violation, spec)
    if 0 < spec.alpha < SMALL_MATRIX_VALUE and spec.n > 0:
        note = "; ".join(x for x in (note, (
            f"alpha = {spec.alpha:.3g} is below what a float LP keeps, so the optimal "
            "mechanism's loss is known within `mechanism_bounds` only")) if x)
        shown = True
    return CountResult("consumer", spec.model, units(sides.mechanism.value),
                       units(sides.geometric.value), hypothesis, verdict,
                       time.perf_counter() - start, reason=reason, mechanism=sides.x,
                       post_processing=sides.T, note=note,
                       mechanism_bounds=bounds if shown else None,
                       code=code if reason else None, **side.fields(spec, verdict))


def _closes(mech: MechanismSide, geo: tuple[_Bracket, np.ndarray, np.ndarray], tol: float
            ) -> bool:
    """Whether the candidate's own certificate decides `optimal` (decide's rule)."""
    assert not isinstance(mech, str)
    return decide(mech[0], geo[0], tol)[0] is Verdict.OPTIMAL


# Float rounding of the brackets: sums of at most a few thousand non-negative terms in
# [0, 1], each rounded relatively by 2^-53.
ROUNDING = 1e-12


def decide(mechanism: _Bracket, geometric: _Bracket, tol: float
           ) -> tuple[Verdict, str, ReasonCode | None]:
    """The verdict from the two brackets (normalised units; losses are minimised, so the
    geometric mechanism's loss can only be at or above the optimal mechanism's):

    optimal: the geometric mechanism's upper end is within tol of the optimal mechanism's
      proven lower end, so geometric <= optimum + tol, rigorously;
    gap (to be confirmed exactly): its lower end exceeds the optimal mechanism's upper end
      (an explicit DP mechanism) by more than tol;
    error: the candidate is below the proven lower bound on every DP mechanism (impossible:
      a numerical failure), or the brackets are too wide to tell ("undecided").
    """
    if geometric.upper < mechanism.lower - max(tol, ROUNDING):
        return Verdict.ERROR, (
            f"the geometric mechanism's loss {geometric.upper:.12g} is below the proven lower "
            f"bound {mechanism.lower:.12g} on every DP mechanism (normalised units): a "
            "numerical failure"), ReasonCode.NUMERICAL
    if geometric.upper - mechanism.lower <= tol:
        return Verdict.OPTIMAL, "", None
    if geometric.lower - mechanism.upper > tol:
        return Verdict.GAP, "", ReasonCode.GAP
    return Verdict.ERROR, (
        f"undecided: the LP solutions are not accurate enough to tell a gap of "
        f"{geometric.value - mechanism.value:.3g} (of the loss's range) from rounding: the "
        f"optimal mechanism's loss lies in [{mechanism.lower:.12g}, {mechanism.upper:.12g}], "
        f"the geometric mechanism's in [{geometric.lower:.12g}, {geometric.upper:.12g}] "
        "(normalised units)"), ReasonCode.BRACKET_TOO_WIDE


def _alpha_bracket(spec: CountSpec) -> tuple[Fraction, Fraction]:
    """Rationals alpha_lo <= alpha <= alpha_hi (equal when alpha is exact)."""
    if spec.alpha_exact is not None:
        return spec.alpha_exact, spec.alpha_exact
    assert spec.epsilon_exact is not None  # the loader sets one of them
    lam_lo, lam_hi = exp_bracket(spec.epsilon_exact)
    return 1 / lam_hi, 1 / lam_lo


def _delta_note(verdict: Verdict, violation: tuple[int, int] | None, spec: CountSpec) -> str:
    """With delta > 0 the theorems of pure privacy do not apply: a gap is expected."""
    if verdict is Verdict.GAP:
        return ("with delta > 0 an (epsilon, delta)-DP mechanism beats the geometric "
                "mechanism at epsilon for this consumer (GS Theorem 1 is for pure privacy)")
    if verdict is Verdict.OPTIMAL:
        return ("the geometric mechanism at epsilon is optimal among (epsilon, delta)-DP "
                "mechanisms for this consumer: delta buys it nothing")
    return ""


def _confirm_delta_gap(spec: CountSpec, exact_loss: np.ndarray, units: Units, sides: _Sides,
                       tol: float) -> tuple[Verdict, str, ReasonCode]:
    """A float gap under (epsilon, delta), proved exactly (verifiers/count/approximate.py)
    or reported as undecided."""
    proved, lower, upper = confirm_gap(spec, exact_loss, units, sides.x, sides.weights,
                                       _alpha_bracket(spec), relevant_rows(spec), tol)
    if proved:
        return Verdict.GAP, (
            f"proved exactly: an (epsilon, delta)-DP mechanism has loss {float(upper):.12g}, "
            f"and the geometric mechanism at epsilon with any post-processing has loss at "
            f"least {float(lower):.12g}"), ReasonCode.GAP
    return Verdict.ERROR, (
        f"undecided: the floats show a gap, but the exact check does not confirm it beyond "
        f"--tol (the geometric mechanism's exact lower bound {float(lower):.12g}, an explicit "
        f"(epsilon, delta) mechanism's exact loss {float(upper):.12g})"
    ), ReasonCode.BRACKET_TOO_WIDE


def _confirm_gap(spec: CountSpec, exact_loss: np.ndarray, units: Units, sides: _Sides,
                 tol: float) -> tuple[Verdict, str, ReasonCode]:
    """A float gap, confirmed exactly (theory/count/exact.py) or reported as undecided."""
    alpha_lo, alpha_hi = _alpha_bracket(spec)
    loss = [[Fraction(v) for v in row] for row in exact_loss]
    x = exact_dp_mechanism(sides.x, alpha_hi)
    if not is_exactly_dp(x, alpha_hi):  # cannot happen: exact_dp_mechanism makes it so
        return (Verdict.ERROR, "undecided: the witness mechanism is not exactly DP (a bug)",
                ReasonCode.BUG)
    prior = None if spec.prior is None else list(spec.prior)
    upper = mechanism_loss(x, loss, spec.side_information, prior)
    support = relevant_rows(spec)
    weights = (prior if prior is not None
               else exact_distribution(sides.weights, spec.side_information))
    unit = [row if i in support else (Fraction(0),) * len(row)
            for i, row in enumerate(units.exact)]
    lower = units.to_user(geometric_lower_bound(geometric_lower(alpha_lo, alpha_hi, spec.n),
                                                unit, weights))
    if lower - upper > units.tolerance(tol):
        return Verdict.GAP, (
            f"proved exactly: an alpha-DP mechanism has loss {float(upper):.12g}, and the "
            f"geometric mechanism with any post-processing has loss at least "
            f"{float(lower):.12g}"), ReasonCode.GAP
    return Verdict.ERROR, (
        f"undecided: the floats show a gap, but the exact check does not confirm it beyond "
        f"--tol (the geometric mechanism's exact lower bound {float(lower):.12g}, an explicit "
        f"mechanism's exact loss {float(upper):.12g})"), ReasonCode.BRACKET_TOO_WIDE


def _pure_fields(spec: CountSpec, verdict: Verdict) -> dict[str, Any]:
    return {}


def _delta_fields(spec: CountSpec, verdict: Verdict) -> dict[str, Any]:
    """The result's `delta` and which mechanism serves the consumer best."""
    return {"delta": rational_text(spec.delta),
            "best": {Verdict.OPTIMAL: "geometric", Verdict.GAP: "lp"}.get(verdict)}


@record
class CountSide:
    """What depends on a count problem's setting: the optimal mechanism's LP (its size
    and its bracket), the exact confirmation of a gap, the note, and the result's own
    fields (pure alpha-DP: GS Theorem 1; (epsilon, delta): verifiers/count/approximate.py)."""

    nonzeros: Callable[[CountSpec], int]
    mechanism: Callable[..., MechanismSide]
    confirm: Callable[..., tuple[Verdict, str, ReasonCode]]
    note: Callable[[Verdict, tuple[int, int] | None, CountSpec], str]
    fields: Callable[[CountSpec, Verdict], dict[str, Any]]
    certificate: bool = False  # the candidate's own dual certificate first (pure DP)


# The mechanism side of each setting of a count problem (tests/test_codebase.py checks that
# it covers them).
SIDES: dict[Setting, CountSide] = {
    Setting.PURE: CountSide(_pure_nonzeros, _mechanism_side, _confirm_gap, _pure_note,
                            _pure_fields, certificate=True),
    Setting.DELTA: CountSide(_delta_nonzeros, _delta_mechanism_side, _confirm_delta_gap,
                             _delta_note, _delta_fields),
}
