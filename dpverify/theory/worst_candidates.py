"""Cheap hints for RR's worst-case LP on all inputs (theory/worst_lp.py, `over_inputs`;
docs/theory.md 3.4): deterministic candidate rules, and the sub-cubes over the extreme
parties. The dense interior-point method (theory/worst_ipm.py) stalls among extreme levels
(brackets of 1e-6 to 2e-5 at k = 9 with epsilons of 15-30), and it ends at the centre of
the optimal face, so its rule is fractional on many columns and accurate only to its last
step.

* Candidate rules: a constant rule (every tau decides the same output y, so acc(x) =
  w(x, y) whatever the channel: a party whose gains make one guess safe, such as -square
  on {0, 1, 2} guessing 1), and the Bayes rule of the best prior (tau decides an output of
  largest z[tau, y]; KOV 2015, eq. 2 with that prior). Measured: a party at k = 7 with
  epsilons up to 25 under -square, where the dense method's rule stalled 2e-6 below the
  prior's bound and the exact simplex then took 136 s, while the constant rule meets it.
* Sub-cubes (`sub_cubes`, `split_worst`): fix the bits x_E of the extreme parties E. A
  prior on one sub-cube {x : x_E = b} is bounded exactly by the worst-case LP of the other
  parties on that sub-cube, and a rule that decodes tau as the sub-cube b = tau_E would
  loses at most the extreme parties' corner entries (see `sub_cubes`).

Only floats here: a candidate replaces an end when its own float bound, in extended
precision, is better; the verdict rests on the exact or enclosed bounds of whatever is
kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dpverify.theory.exact_rows import clean_distribution, clean_stochastic
from dpverify.theory.rr import kron_apply
from dpverify.theory.worst_lp import WorstLp

WORK = np.longdouble

__all__ = ["best_candidate", "best_ends", "candidate_rules", "dense_lp_ends", "float_bracket",
           "prior_bound", "rule_loss", "rule_worst", "split_parties", "split_worst",
           "sub_cubes", "with_method"]


def rule_worst(lp: WorstLp, rule: np.ndarray) -> float:
    """min over the block's rows of acc_Q (a Kronecker channel), in extended precision."""
    assert lp.channel.factors is not None
    factors = [np.asarray(f, dtype=WORK) for f in lp.channel.factors]
    acc = (kron_apply(factors, np.asarray(rule, dtype=WORK), WORK)[lp.rows]
           * np.asarray(lp.gain, dtype=WORK)).sum(axis=1)
    return float(acc.min())


def _scores(lp: WorstLp, prior: np.ndarray) -> np.ndarray:
    """z[tau, y] = sum_x pi[x] P[x, tau] w(x, y) of a prior on the block's rows (made a
    distribution), in extended precision."""
    assert lp.channel.factors is not None
    full = np.zeros((lp.channel.columns, lp.m), dtype=WORK)
    full[lp.rows] = np.asarray(clean_distribution(prior), dtype=WORK)[:, None] \
        * np.asarray(lp.gain, dtype=WORK)
    return kron_apply([np.asarray(f, dtype=WORK).T for f in lp.channel.factors], full, WORK)


def prior_bound(lp: WorstLp, prior: np.ndarray) -> float:
    """F(pi) = sum_tau max_y z[tau, y], the bound of a prior (KOV 2015, eq. 6's dual; docs/
    theory.md 2.12), in extended precision."""
    return float(_scores(lp, prior).max(axis=1).sum())


def float_bracket(lp: WorstLp, prior: np.ndarray, rule: np.ndarray) -> tuple[float, float]:
    """The float bracket [min over the rows of acc_Q, F(pi)] of a rule (on every column)
    and a prior (on the block's rows), both made feasible (the rule's rows clipped and
    normalised, the prior made a distribution), in extended precision by the channel's
    Kronecker factors."""
    return rule_worst(lp, clean_stochastic(rule)), prior_bound(lp, prior)


def candidate_rules(lp: WorstLp, prior: np.ndarray | None) -> list[np.ndarray]:
    """The constant rules, one per output, and the Bayes rule of `prior` (masses on the
    block's rows) when one is given."""
    n, m = lp.channel.columns, lp.m
    out = []
    for y in range(m):
        rule = np.zeros((n, m))
        rule[:, y] = 1.0
        out.append(rule)
    if prior is not None and np.isfinite(prior).all() and prior.sum() > 0:
        z = _scores(lp, prior)
        bayes = np.zeros((n, m))
        bayes[np.arange(n), np.argmax(z, axis=1)] = 1.0
        out.append(bayes)
    return out


def best_candidate(lp: WorstLp, prior: np.ndarray | None, lower: float
                   ) -> tuple[float, np.ndarray] | None:
    """(its worst case, the rule) of the best candidate rule when it beats `lower`, the
    worst case of the rule in hand; else None."""
    best = None
    for rule in candidate_rules(lp, prior):
        value = rule_worst(lp, rule)
        if value > lower and (best is None or value > best[0]):
            best = (value, rule)
    return best


# ------------------------------------------------------------------ sub-cubes of the inputs


def split_parties(lambdas, entry: float, most: int) -> list[int]:
    """The parties whose corner entry 1/(1 + lambda) is below `entry`, the most extreme
    first, at most `most` of them."""
    deltas = [1.0 / (1.0 + float(lam)) for lam in lambdas]
    chosen = sorted((d, i) for i, d in enumerate(deltas) if d < entry)
    return sorted(i for _, i in chosen[:most])


def rule_loss(lambdas, fixed: Sequence[int]) -> float:
    """The most the sub-cubes' rule over the parties `fixed` may lose against the least
    sub-cube value (gains in [0, 1]; `sub_cubes`): 1 - prod_E (1 - 1/(1 + lambda_i))."""
    kept = 1.0
    for i in fixed:
        kept *= 1.0 - 1.0 / (1.0 + float(lambdas[i]))
    return 1.0 - kept


def _index(rows: np.ndarray, k: int, parties: list[int]) -> np.ndarray:
    """The sub-input index of each row over `parties` (big-endian, in their order)."""
    out = np.zeros(rows.size, dtype=np.int64)
    for i in parties:
        out = (out << 1) | ((rows >> (k - 1 - i)) & 1)
    return out


def sub_cubes(lp: WorstLp, lambdas, fixed: list[int], solve_block,
              solved: dict | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """A prior and a rule of the block from its sub-cubes {x : x_E = b} (E = `fixed`).

    A prior supported on one sub-cube has F(pi) equal to the sub-problem's on the other
    parties N (with the function at x_E = b): z[tau, y] carries the common factor
    P_E[b, tau_E], which leaves the max over y and sums to 1 over tau_E. So the
    sub-cube of least value gives an upper bound, exactly. The rule decides tau as the
    sub-cube b = tau_E would: its worst case is at least prod_E (1 - 1/(1 + lambda)) times
    the least sub-cube value (gains in [0, 1]), so it meets the bound up to the levels of
    E. `solve_block(sub_lp)` returns (prior on the sub-LP's rows, rule on its columns,
    its upper bound, whether every solve it tried finished); None when E is empty or
    every party. `solved` keeps each sub-problem's answer by (E, b) for a later call on
    the same block, when every solve of it finished (a solve the time cut short may end
    elsewhere without that limit): a pass cut short by its time does not solve its
    finished sub-cubes again."""
    k = len(lambdas)
    free = [i for i in range(k) if i not in fixed]
    if not fixed or not free:
        return None
    rows = np.asarray(lp.rows, dtype=np.int64)
    e_idx, n_idx = _index(rows, k, fixed), _index(rows, k, free)
    n_sub, m = 1 << len(free), lp.m
    gain = np.asarray(lp.gain, dtype=np.float64)
    sub_lambdas = [lambdas[i] for i in free]
    rules: dict[int, np.ndarray] = {}
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for b in np.unique(e_idx):
        sel = np.flatnonzero(e_idx == b)
        sel = sel[np.argsort(n_idx[sel], kind="stable")]
        table = np.zeros((n_sub, m))
        table[n_idx[sel]] = gain[sel]
        relevant = np.zeros(n_sub, dtype=bool)
        relevant[n_idx[sel]] = True
        key = (tuple(fixed), int(b))
        if solved is not None and key in solved:
            prior, rule, upper = solved[key]
        else:
            prior, rule, upper, finished = solve_block(
                WorstLp.over_inputs(sub_lambdas, table, relevant))
            if solved is not None and finished:
                solved[key] = (prior, rule, upper)
        rules[int(b)] = rule
        if best is None or upper < best[0]:
            best = (upper, sel, prior)
    assert best is not None
    _, sel, prior = best
    full_prior = np.zeros(rows.size)
    full_prior[sel] = prior
    taus = np.arange(lp.channel.columns, dtype=np.int64)
    t_e, t_n = _index(taus, k, fixed), _index(taus, k, free)
    fallback = rules[min(rules)]
    full_rule = np.empty((taus.size, m))
    for b in np.unique(t_e):
        at = np.flatnonzero(t_e == b)
        full_rule[at] = rules.get(int(b), fallback)[t_n[at]]
    return full_prior, full_rule


def with_method(solve, how: str):
    """`solve` (a float LP solver) with HiGHS's method `how` ("" leaves HiGHS its own
    choice)."""
    if not how:
        return solve
    return lambda program: solve(replace(program, solver=how))


def split_worst(lp: WorstLp, lambdas, entry: float, most: int, solve,
                largest: int | None = None, *, methods: Sequence[str] = ("",),
                width: float = 0.0, solved: dict | None = None):
    """The worst case of the block from its sub-cubes over the parties whose corner entry is
    below `entry` (`sub_cubes`; each sub-problem's dense LP by `solve`, a float LP
    solver, rows scaled and entries it cannot keep dropped: only hints), with the
    candidate rules: a DenseWorst with its float bracket, or None when no party is that
    extreme (or every one is), a sub-cube has more than `largest` inputs, or a
    sub-problem's LP fails with every method.

    Each sub-problem is solved by HiGHS's `methods` in turn ("" its own choice,
    "simplex", "ipm") while its own float bracket is wider than `width`, keeping the
    better rule and the better prior of the solves: HiGHS's simplex has returned
    "optimal" with rule rows summing to 0.94 (a sub-cube of 128 inputs among levels of 14
    to 27: its rule 5.6e-3 below the prior's bound), where the interior point closed the
    same LP to 1e-12."""
    from dpverify.theory.worst_ipm import DenseWorst
    from dpverify.theory.worst_lp import solve_float

    class _Failed(Exception):
        pass

    def block(sub: WorstLp):
        best = None  # (lower, rule, upper, prior)
        finished = True
        for how in methods:
            found = solve_float(sub, with_method(solve, how), scale_rows=True,
                                drop_tiny=True, name="rr-worst-cube")
            if not found.ok:
                finished = False
                continue
            prior = clean_distribution(found.masses)
            lower, upper = float_bracket(sub, prior, found.rule)
            if best is None:
                best = (lower, found.rule, upper, prior)
            else:
                rule = (lower, found.rule) if lower > best[0] else best[:2]
                bound = (upper, prior) if upper < best[2] else best[2:]
                best = (*rule, *bound)
            if best[2] - best[0] <= width:
                break
        if best is None:
            raise _Failed
        return best[3], best[1], best[2], finished

    fixed = split_parties(lambdas, entry, most)
    if largest is not None and 1 << (len(lambdas) - len(fixed)) > largest:
        return None
    try:
        got = sub_cubes(lp, lambdas, fixed, block, solved)
    except _Failed:
        return None
    if got is None:
        return None
    prior, rule = got
    lower, upper = float_bracket(lp, prior, rule)
    better = best_candidate(lp, prior, lower)
    if better is not None:
        lower, rule = better
    return DenseWorst(prior, rule, lower, upper, 0)


def best_ends(a, b):
    """The better rule and the better prior of two DenseWorst results."""
    rule = (a.lower, a.rule) if a.lower >= b.lower else (b.lower, b.rule)
    prior = (a.upper, a.prior) if a.upper <= b.upper else (b.upper, b.prior)
    return replace(a, lower=rule[0], rule=rule[1], upper=prior[0], prior=prior[1],
                   iterations=a.iterations + b.iterations)


def dense_lp_ends(lp: WorstLp, found, solve, *, scale_rows: bool = False,
                  drop_tiny: bool = False, name: str = "rr-worst-dense"):
    """`found` (a DenseWorst) with the rule and the prior of the block's dense LP, solved
    by `solve` (worst_lp.solve_float), where they bound better (`float_bracket`, then
    `best_ends`: an end of `found` that is as good is kept, the same object); `found`
    itself when the LP is not solved."""
    from dpverify.theory.worst_lp import solve_float  # (its default form: dense)

    other = solve_float(lp, solve, scale_rows=scale_rows, drop_tiny=drop_tiny, name=name)
    if not other.ok:
        return found
    lower, upper = float_bracket(lp, other.masses, other.rule)
    return best_ends(found, replace(found, rule=clean_stochastic(other.rule),
                                    prior=clean_distribution(other.masses), lower=lower,
                                    upper=upper, iterations=0))
