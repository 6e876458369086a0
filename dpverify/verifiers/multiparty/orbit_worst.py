"""A minimax prior and a worst-case rule on orbits, for the orbit certificate (worst case).

Per sub-problem (the observer; or one own bit of a party, KOV eq. 4), RR's worst-case LP on
orbits (theory/worst_lp.py, over_class_orbits) is solved in floats, by column generation,
for a rule and a prior; then, when it is small, exactly (the revised simplex from the float
basis), so that the
certificate proves the optimum; otherwise the float solution is rationalised, and the
certificate brackets the optimum (both of its ends are exact whatever the rule and prior).
A party's worst case is the smaller of its two own bits' (KOV eq. 4): the prior of the
sub-problem with the smaller value is used, and each own bit keeps its own rule.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError
from dpverify.lp.builder import LpBuilder
from dpverify.policy import ORBIT_EXACT_COLUMNS, ORBIT_EXACT_ROWS, QUICK_PIVOT_WORK
from dpverify.theory.exact_lp import PivotLimit
from dpverify.theory.exact_rows import (
    LARGEST,
    exact_distribution,
    exact_row,
    exact_stochastic,
    snap,
)
from dpverify.theory.orbits.certificates import (
    OrbitProblem,
    argmax_rule,
    label_scores,
    worst_certificate,
)
from dpverify.theory.orbits.interval import (
    argmax_decision,
    rule_accuracies,
    uniform_scores,
    worst_interval,
)
from dpverify.theory.orbits.space import OrbitArray, OrbitSpace, without_class
from dpverify.theory.rr import kron_apply
from dpverify.theory.worst_channels import class_blocks
from dpverify.theory.worst_hints import WorstHints, carried, dense_or_columns
from dpverify.theory.worst_lp import WorstLp, solve_exact
from dpverify.verifiers.multiparty.hints import Hints
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.solving import Solver

RATIONAL_DENOMINATOR = 10**12  # rationalised float hints keep at most this denominator
# lambdas from epsilon: a candidate whose bracket is this narrow (relative) is as good as
# the brackets of e^eps themselves (about 1e-19)
EPS_BRACKET = Fraction(1, 10**15)


def _relevant(problem: OrbitProblem) -> list[list[int]]:
    bits = problem.own_bits()
    count = len(problem.gain)
    if bits is None:
        return [list(range(count))]
    return [[w for w in range(count) if bits[w] == b] for b in (0, 1)]


def orbit_worst_certificate(agent: str, problem: OrbitProblem, lower, upper, exact: bool,
                            options: VerifyOptions, hints: Hints, *, quick: bool = False):
    """The worst-case orbit certificate: the uniform candidate when it closes; else the
    rationalised float solution of the orbit LP (solved tightly); and when that leaves a
    bracket (rational lambdas: any gap; lambdas from epsilon: wider than half of --tol)
    and the LP is small, its exact solution (the revised simplex from the float basis).
    `quick` (verify's attempt; certify proves): with rational lambdas a bracket within
    half of --tol stands when the exact simplex does not finish within
    policy.QUICK_PIVOT_WORK (worst_lp.pivot_budget)."""
    cert = uniform_candidate(agent, problem, lower, upper, exact)
    if cert is not None:
        return cert
    gain = [list(row) for row in problem.units.exact]
    parts = _relevant(problem)
    prior, rule, notes, width = float_hints(problem, gain, parts, upper, options, hints)
    # the exact revised simplex keeps its rows x rows systems small (policy.py)
    small = all(len(r) + len(gain) <= ORBIT_EXACT_ROWS for r in parts) and \
        len(gain) * len(gain[0]) <= ORBIT_EXACT_COLUMNS
    if not exact and not small and width > HOPELESS * options.tol:
        # valued exactly, the same rule and prior bracket the optimum as widely as in
        # floats: seconds to minutes of rationals for an `error` (measured: majority at 30
        # parties in four classes, 3,640 orbits, hints 7.3e-8 wide: past 100 s)
        raise SizeLimitError(
            f"the orbit LP's float hints bracket the optimum within {width:.3g} of the "
            f"gains' range, wider than --tol ({options.tol:g}); valued exactly they "
            "bracket it as widely, and the LP is too large for the exact simplex")
    cert = worst_certificate(agent, problem, lower, upper, exact, prior, rule, notes)
    within = cert.status == "bracket" and \
        cert.width <= problem.units.tolerance(options.tol) / 2
    if cert.status == "proved-optimal" or (within and not exact) or not small:
        return cert
    try:
        prior, rule, notes = _exact_hints(problem, gain, parts, lower, upper, options,
                                          QUICK_PIVOT_WORK if quick and within else None)
    except PivotLimit as exc:
        return replace(cert, notes=(*cert.notes, f"the exact simplex found {exc}: the "
                                    "checked bracket, within --tol, stands (certify "
                                    "proves the optimum)"))
    return worst_certificate(agent, problem, lower, upper, exact, prior, rule, notes)


def orbit_worst_interval(agent: str, problem: OrbitProblem, lower, upper,
                         options: VerifyOptions, hints: Hints):
    """The worst-case orbit certificate in arb balls (theory/orbits/interval.py): the
    uniform prior (for a party, on the own bit with the smaller bound) with RR's argmax
    rule (of the uniform prior's scores at the upper lambdas, computed for the bound: any
    rule is a lower end, valued in balls at the lower ones), kept when its bracket is
    within half of --tol; else the rationalised float solution of the orbit LP (guarded by
    --max-orbit-work: orbits^2 x outputs), the narrower of the two."""
    scores = uniform_scores(problem, upper)
    decision = argmax_decision(problem, scores)
    value = min(rule_accuracies(problem, lower, decision))
    bits = [None] if problem.own is None else [0, 1]
    best = min((worst_interval(agent, problem, lower, upper, None, decision,
                               uniform_bit=b, scores_up=scores, value=value) for b in bits),
               key=lambda c: c.bound)
    half = problem.units.tolerance(options.tol) / 2
    if best.width <= half:
        return best
    count, m = lp_orbits(problem), len(problem.outputs)
    lp_runs = count * count * m <= options.max_orbit_work
    # the game's candidate is valued in balls where it could decide, or where it is the
    # last bracket before a refusal; where the orbit LP's hints follow, not when its float
    # bracket is wider than --tol (twice what deciding needs)
    game = _game_candidate(agent, problem, lower, upper, options.solver(),
                           skip_wider=float(options.tol) if lp_runs else None)
    if game is not None and game.width < best.width:
        best = game
        if best.width <= half:
            return best
    if not lp_runs:
        limit = (f"the worst-case LP on {count:,} orbits (about {count * count * m:.3g} "
                 f"coefficients) is over --max-orbit-work ({options.max_orbit_work:.3g}; "
                 "raise it with --max-orbit-work)")
        return replace(best, notes=(*best.notes, f"{limit}: the uniform prior's bracket"),
                       limit=limit)
    gain = [list(row) for row in problem.units.exact]
    prior, rule, notes, _ = float_hints(problem, gain, _relevant(problem), upper, options,
                                        hints)
    cert = worst_interval(agent, problem, lower, upper, prior, rule, notes)
    return cert if cert.width < best.width else best


def lp_orbits(problem: OrbitProblem) -> int:
    """The orbits of the worst-case LP solved for the hints: of a party's own bit, on the
    other classes' orbits (`_orbit_lp_hints`), half of the problem's; else all of them."""
    count = len(problem.gain)
    return count // 2 if problem.own is not None and len(problem.sizes) > 1 else count


def _game_candidate(agent: str, problem: OrbitProblem, lower, upper, solve: Solver, *,
                    skip_wider: float | None = None):
    """The zero-information candidate: per sub-problem (the observer; or each own bit of a
    party, KOV eq. 4), the matrix game of the gains between the function's level sets
    (rows: distinct gain rows) and the outputs, solved in floats and made exact. Its rule
    is the optimal mixed output, the same on every corner orbit (whatever RR releases, it
    is worth the game's value on every input); its prior puts the game's weight on each
    level set, spread as the uniform prior (for a party, the prior of the own bit whose
    bound is smaller). Close to optimal when the channel says little about f (parity at
    small epsilons: RR's signal is the product of the parties' (lambda - 1) / (lambda +
    1)). None when a game's LP fails, or when its float bracket (normalised gains,
    `_float_width`) is wider than `skip_wider`: it is then not valued in balls."""
    sizes = problem.space(lower).orbit_sizes()
    rows = [tuple(r) for r in problem.units.exact]
    parts = _relevant(problem)
    games = [_game(rows, sizes, part, solve) for part in parts]
    if any(g is None for g in games):
        return None
    if skip_wider is not None and _float_width(problem, upper, rows, parts,
                                                games) > skip_wider:
        return None
    notes = ("the zero-information game's prior (by level set of the function) and mixed "
             "output, in arb balls",)
    decisions = []
    for q, _ in games:
        # one row object, repeated: the certificate's JSON converts it once
        # (format.nested_strings), and the checker checks it once (claim.read_rules)
        row = tuple(q)
        decisions.append(tuple(row for _ in range(len(rows))))
    decision = decisions[0] if problem.own is None else tuple(decisions)
    return min((worst_interval(agent, problem, lower, upper, mass, decision, notes)
                for _, mass in games), key=lambda c: c.bound)


def _float_width(problem: OrbitProblem, upper, rows: list[tuple], parts, games) -> float:
    """The games' candidate's bracket in floats (normalised gains; worst_candidates.
    float_bracket, by the classes' Kronecker factors): the least of the parts' prior
    bounds less the least accuracy of their rules on their own inputs."""
    from dpverify.theory.worst_candidates import float_bracket

    space = problem.space(upper)
    g = np.array([[float(v) for v in row] for row in rows])
    lows, highs = [], []
    for part, (q, mass) in zip(parts, games, strict=True):
        lp = WorstLp.over_class_orbits(space, part, g)
        rule = np.tile(np.array([float(v) for v in q]), (lp.channel.columns, 1))
        low, high = float_bracket(lp, np.array([float(mass[w]) for w in part]), rule)
        lows.append(low)
        highs.append(high)
    return min(highs) - min(lows)


def _game(rows: list[tuple], sizes: list[int], part: list[int], solve: Solver):
    """(the game's mixed output, its prior's masses on every orbit) for the orbits `part`;
    None when the LP fails. The LP is HiGHS's, through the run's solver (scipy.optimize,
    for this one small LP, cost a process 0.11 s to import)."""
    levels = sorted({rows[w] for w in part})
    G = np.array([[float(v) for v in row] for row in levels])
    n_levels, m = G.shape
    # the rule: max t, sum_y G[v, y] q_y - t >= 0, q a distribution; the prior from the
    # level rows' duals (<= 0 for rows >= 0 of a maximisation: lp/model.py)
    lp = LpBuilder()
    q_cols = lp.add_cols(m)
    t_col = lp.add_cols(1, cost=1.0, lo=-np.inf)
    level_rows = lp.add_rows(n_levels, 0.0, np.inf)
    lp.add_matrix(level_rows, q_cols, G)
    lp.add(level_rows, t_col[0], -1.0)
    total = lp.add_rows(1, 1.0, 1.0)
    lp.add(total[0], q_cols, 1.0)
    found = solve(lp.build(maximize=True, name="zero-information-game"))
    if not found.optimal:
        return None
    rounding = snap(RATIONAL_DENOMINATOR)
    q = exact_distribution(np.clip(found.x[q_cols], 0.0, None), rounding=rounding)
    duals = -np.asarray(found.row_duals[level_rows])
    weights = exact_distribution(np.clip(duals, 0.0, None) if np.any(duals > 0)
                                 else np.ones(n_levels), rounding=rounding)
    level_of = {levels[v]: v for v in range(n_levels)}
    totals = [0] * n_levels
    for w in part:
        totals[level_of[rows[w]]] += sizes[w]
    mass = [Fraction(0)] * len(rows)
    for w in part:
        v = level_of[rows[w]]
        mass[w] = weights[v] * Fraction(sizes[w], totals[v])
    return q, mass


def uniform_candidate(agent: str, problem: OrbitProblem, lower, upper, exact: bool):
    """The worst-case certificate of the uniform prior (on the own bit with the smaller
    value, for a party) and RR's argmax rule, when it closes: the bounds meet exactly, or
    (lambdas from epsilon) within the brackets of e^eps; else None."""
    space = problem.space(lower)
    sizes = space.orbit_sizes()
    prior = OrbitArray(np.array(sizes, dtype=object)[:, None], 2 ** space.parties)
    rule = argmax_rule(problem, label_scores(problem, space, problem.unit_gain, prior))
    best = None
    for relevant in _relevant(problem):
        total = sum(sizes[w] for w in relevant)
        mass = [Fraction(sizes[w], total) if w in set(relevant) else Fraction(0)
                for w in range(len(sizes))]
        cert = worst_certificate(agent, problem, lower, upper, exact, mass, rule)
        if best is None or cert.bound < best.bound:
            best = cert
    assert best is not None
    if best.status == "proved-optimal" or (not exact and best.status == "bracket"
                                           and best.width <= EPS_BRACKET * abs(best.bound)):
        return best
    return None


def _exact_hints(problem: OrbitProblem, gain, parts, lower, upper, options,
                 pivot_work: int | None = None):
    """Exactly optimal rules (at the lower lambdas) and prior (at the upper lambdas); with
    `pivot_work`, a PivotLimit when a solve is over its budget (worst_lp.solve_exact)."""
    finder = options.solver().basis_finder()
    rules, priors, values = [], [], []
    for relevant in parts:
        found = solve_exact(WorstLp.over_class_orbits(problem.space(lower), relevant,
                                                      gain_exact=gain), basis_finder=finder,
                            pivot_work=pivot_work)
        masses = found.masses
        if tuple(upper) != tuple(lower):
            masses = solve_exact(WorstLp.over_class_orbits(problem.space(upper), relevant,
                                                           gain_exact=gain),
                                 basis=found.basis, basis_finder=finder,
                                 pivot_work=pivot_work).masses
        mass = [Fraction(0)] * len(gain)
        for w, v in zip(relevant, masses, strict=True):
            mass[w] = v
        rules.append(tuple(tuple(r) for r in found.rule))
        priors.append(mass)
        values.append(found.value)
    best = min(range(len(parts)), key=lambda b: values[b])
    decision = rules[0] if problem.own is None else tuple(rules)
    return priors[best], decision, ()


# The float hints are solved tightly: they become the certificate's bounds.
TIGHT = 1e-10
# ... and HiGHS's check of a small block the dense method left open
# (worst_hints.dense_or_columns) gets at most this many seconds
CHECK_SECONDS = 2.0
# ... and an exact certificate from hints whose float bracket is wider than this many
# times --tol is not made (`verify`; `certify` makes it): it could not decide
HOPELESS = 2.0
# ... and the orbit LP's dense method stops refining (no more rows, no second run on every
# BLAS thread) once its float bracket is within this share of --tol (normalised gains):
# the interval certificate is kept within half of it, and rationalising the pair (to
# RATIONAL_DENOMINATOR) moves the ends by far less than the tenth left (measured: a float
# bracket of 2.349e-10 became an interval certificate 2.35e-10 wide)
HINT_SHARE = 0.4


def float_hints(problem: OrbitProblem, gain, parts, upper, options: VerifyOptions,
                hints: Hints):
    """The rationalised float solutions of the orbit LPs (_float_hints), solved once per
    classes and upper lambdas (the interval and the exact certificates at the coarse and
    the fine brackets ask for the same LP, at lambdas a hair apart: any rule and prior are
    valid bounds at either, so the lambdas are keyed to 12 digits; hints.py). Their float
    bracket's width (in the gains' range) comes last."""
    key = ("orbit-worst", tuple(problem.classes), tuple(f"{float(v):.12g}" for v in upper),
           tuple(tuple(p) for p in parts))
    return hints.once(key, lambda: _float_hints(problem, gain, parts, upper, options))


# A rule's entries below this fraction of their row's largest are dropped before it is
# made exact: an interior point leaves every output a trace (3600 orbits x 41 outputs of a
# party's `sum` were 150,000 rationalisations, 7 s), and dropping them costs the rule at
# most outputs x 1e-12 of accuracy on any input (gains in [0, 1]), far below --tol; the
# certificate values whatever rule it is given exactly.
RULE_FLOOR = 1e-12


def _sparse_rule(rule: np.ndarray) -> np.ndarray:
    """The rule clipped at 0, with its entries below RULE_FLOOR of their row's largest
    dropped (a row without mass keeps it all: exact_stochastic makes it uniform)."""
    rule = np.clip(rule, 0.0, None)
    top = rule.max(axis=1, keepdims=True)
    return np.where(rule >= RULE_FLOOR * top, rule, 0.0)


def _orbit_lp_hints(problem: OrbitProblem, space: OrbitSpace, g: np.ndarray, relevant,
                    bit: int, solve_, enough: float, seed: np.ndarray | None = None,
                    check=None, other: tuple[WorstHints, np.ndarray] | None = None
                    ) -> tuple[WorstHints, np.ndarray, np.ndarray]:
    """The float hints of one sub-problem's orbit LP, and where its prior's masses and its
    rule's rows go in the problem's orbits: for a party whose own class is one party
    among others, the LP of the own bit `bit` on the other classes' orbits
    (theory/orbits/space.py, `without_class`: the same optimum, on half the rows and half
    the columns); else the LP on `relevant` and every corner orbit. A float bracket within
    `enough` (normalised gains) is all the certificate needs; `seed`, rows of the LP that
    join its first round (the other own bit's prior support: the same orbits); `check`,
    the time-limited solver of worst_hints.dense_or_columns's check of a small block;
    `other`, the other own bit's hints and its rows' gains, carried over instead of a
    solve where the two gain tables' columns dominate each other (worst_hints.carried)."""
    own = problem.own
    if own is None or len(problem.sizes) < 2:
        lp = WorstLp.over_class_orbits(space, relevant, g)
        return (dense_or_columns(lp, solve_, enough, check=check), np.asarray(relevant),
                np.arange(space.count))
    rest, rows, columns = without_class(space, own, bit)
    assert np.array_equal(rows, relevant)  # the own bit's orbits, in the same order
    if other is not None:
        hinted = carried(other[0], other[1], g[rows])
        if hinted is not None:
            return hinted, rows, columns
    lp = WorstLp.over_class_orbits(rest, list(range(rest.count)), g[rows])
    return dense_or_columns(lp, solve_, enough, seed, check), rows, columns


def _float_hints(problem: OrbitProblem, gain, parts, upper, options):
    """The rationalised float solutions of the orbit LPs (a valid, weaker certificate):
    theory/worst_hints.py, the dense interior-point method, else column generation."""
    space = problem.space(upper)
    g = np.array([[float(v) for v in row] for row in gain])
    factors = class_blocks(space)
    solve_ = options.solver().tight(TIGHT)
    check = solve_.at_most(CHECK_SECONDS)
    rules, priors, values, masses = [], [], [], []
    seed = other = None
    for bit, relevant in enumerate(parts):
        found, rows, columns = _orbit_lp_hints(problem, space, g, relevant, bit, solve_,
                                               options.tol * HINT_SHARE, seed, check, other)
        if found.ok and problem.own is not None and len(problem.sizes) > 1:
            seed = np.flatnonzero(np.asarray(found.masses) > 0)
            other = (found, g[rows])
        prior = np.zeros(len(gain))
        if found.ok:
            rule = _sparse_rule(found.rule)
            prior[rows] = np.clip(found.masses, 0.0, None)
        else:  # no hint: RR's first output everywhere, the uniform prior
            rule = np.zeros((int(columns.max()) + 1, g.shape[1]))
            rule[:, 0] = 1.0
            prior[relevant] = 1.0
        rounding = snap(RATIONAL_DENOMINATOR)
        exact_rule = [tuple(r) for r in exact_stochastic(rule, rounding=rounding,
                                                         completion=LARGEST)]
        rules.append(tuple(exact_rule[int(j)] for j in columns))  # on every corner orbit
        rule = rule[columns]
        priors.append(exact_row(prior, support=relevant, rounding=rounding,
                                completion=LARGEST))
        masses.append(prior / prior.sum() if prior.sum() > 0 else prior)
        values.append(float(np.min((kron_apply(factors, rule) * g).sum(axis=1)[relevant])))
    best = min(range(len(parts)), key=lambda b: values[b])
    decision = rules[0] if problem.own is None else tuple(rules)
    notes = ("the certificate brackets the optimum with the rationalised float rule and "
             "prior of the worst-case LP on orbits",)
    # the prior's bound sum_tau max_y z in floats (theory.md 2.1), for the width
    z = kron_apply([f.T for f in factors], masses[best][:, None] * g)
    return priors[best], decision, notes, float(z.max(axis=1).sum()) - values[best]
