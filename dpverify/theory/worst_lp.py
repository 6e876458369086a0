"""RR's worst-case decision LP, written once (KOV 2015, eq. 6 for the observer; eq. 4 for a
party, per own bit or own symbol; docs/theory.md, "Certificates" and "Protocol audits").

For one block of inputs (the observer: every input; a party: the inputs with one own bit or
symbol) and a fixed protocol C (randomized response, or an explicit one):

    maximise t  s.t.  sum_{c, y} C[a, c] g[a, y] Q[c, y] >= t   for every row a of the block
                      sum_y Q[c, y] = 1,  Q >= 0                for every column c

Its LP dual is a minimax prior: masses rho_a >= 0 on the rows, summing to 1, and the
optimum is min over rho of sum_c max_y sum_a rho_a C[a, c] g[a, y]. Gains are in [0, 1]
(theory/units.py), so t >= 0 costs nothing.

Four descriptions of C (`WorstLp`'s constructors; theory/worst_channels.py), one LP:

* `over_inputs`: rows the inputs x, columns RR's outputs tau, C = P_RR (a Kronecker product:
  the chain form of lp/builder.py, and the dense interior-point method, use its factors);
* `over_input_orbits`: rows the orbits of inputs under a symmetry (at a representative),
  columns the orbits of tau, C[a, o] = sum_{tau in o} P[rep(a), tau];
* `over_class_orbits`: rows and columns the orbits of classes of interchangeable parties,
  C = K, K[W, J] = |J| M[W, J] / |W| (theory/orbits/space.py), without 2^k;
* `over_transcripts`: rows the block's inputs, columns the transcripts of an explicit
  protocol, C = P(t | x); only the transcripts some row reaches (`live`) enter the LP.

A rule is returned over every column (a column outside the LP decides the first output),
and a prior as masses on the rows summing to 1. theory/ builds these LPs and never solves
them in floats: `solve_float` takes the solve as a callable (`Solve`); `solve_exact` runs the
exact revised simplex (theory/exact_lp.py) from a given basis, else from the optimal basis
of a float twin (`BasisFinder`, dpverify/lp/basis.py), else from a crash basis.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.defaults import LpForm
from dpverify.lp.builder import LpBuilder
from dpverify.lp.model import LinearProgram, LpSolution
from dpverify.records import record
from dpverify.theory.exact import Scaled
from dpverify.theory.worst_channels import (
    Channel,
    ClassChannel,
    KronChannel,
    OrbitSumChannel,
    TranscriptChannel,
    spread_exact,
    spread_floats,
)

if TYPE_CHECKING:
    from dpverify.theory.orbits.space import OrbitSpace

# (dense float rows, rhs, cost) of a standard-form LP (maximise cost z, rows z = rhs,
# z >= 0) -> the columns of an optimal basis found in floats (one per row), or None
BasisFinder = Callable[[np.ndarray, np.ndarray, np.ndarray], Sequence[int] | None]
# a float LP solver (backend, time limit, threads and tolerances bound by the caller)
Solve = Callable[[LinearProgram], LpSolution]


# --------------------------------------------------------------------------- the LP


@record(eq=False)
class WorstLp:
    """One block of the LP (module docstring): `channel` C, `rows` the index of each row's
    input (or orbit), `gain_rows` the row of the gain table it reads, and the gain table
    (all inputs or orbits; in [0, 1]) as floats and/or exactly (rows of rationals, or a
    Scaled matrix)."""

    channel: Channel
    rows: np.ndarray
    gain_rows: np.ndarray
    table: np.ndarray | None = None
    table_exact: Scaled | Sequence[Sequence] | None = None
    sizes: np.ndarray | None = None  # orbit sizes of the rows (over_input_orbits)

    @classmethod
    def over_inputs(cls, lambdas: Sequence, gain: np.ndarray | None = None,
                    relevant: np.ndarray | None = None, *, gain_exact=None) -> WorstLp:
        n = 1 << len(lambdas)
        rows = np.arange(n) if relevant is None else np.flatnonzero(relevant)
        return cls(KronChannel(lambdas, rows), rows, rows, gain, gain_exact)

    @classmethod
    def over_input_orbits(cls, lambdas: Sequence, orbits, gain: np.ndarray | None = None,
                          relevant: np.ndarray | None = None, *, gain_exact=None) -> WorstLp:
        """`orbits`: spec/symmetric.py Orbits (ids, reps, sizes, count)."""
        rows = np.arange(orbits.count)
        if relevant is not None:
            rows = rows[relevant[orbits.reps]]
        reps = np.asarray(orbits.reps)[rows]
        return cls(OrbitSumChannel(lambdas, orbits.ids, orbits.count, reps), rows, reps, gain,
                   gain_exact, np.asarray(orbits.sizes)[rows])

    @classmethod
    def over_class_orbits(cls, space: OrbitSpace, relevant: Sequence[int],
                          gain: np.ndarray | None = None, *, gain_exact=None) -> WorstLp:
        rows = np.asarray(relevant, dtype=np.intp)
        return cls(ClassChannel(space, rows), rows, rows, gain, gain_exact)

    @classmethod
    def over_transcripts(cls, tr, mask: np.ndarray, gain: np.ndarray | None = None, *,
                         gain_exact=None) -> WorstLp:
        """`tr`: theory/protocols/transcripts.py Transcripts; `mask` the block's inputs."""
        rows = np.flatnonzero(mask)
        return cls(TranscriptChannel(tr, mask), rows, rows, gain, gain_exact)

    def restricted(self, positions: np.ndarray) -> WorstLp:
        """The LP on some of its rows (`positions` into `rows`): a relaxation (fewer
        constraints), whose priors are priors of this LP (zero elsewhere)."""
        positions = np.asarray(positions, dtype=np.intp)
        rows = self.rows[positions]
        return WorstLp(self.channel.restricted(rows), rows, self.gain_rows[positions],
                       self.table, self.table_exact,
                       None if self.sizes is None else self.sizes[positions])

    @property
    def m(self) -> int:
        if self.table is not None:
            return int(self.table.shape[1])
        if isinstance(self.table_exact, Scaled):
            return int(self.table_exact.num.shape[1])
        assert self.table_exact is not None
        return len(self.table_exact[0])

    @functools.cached_property
    def gain(self) -> np.ndarray:
        """The rows' gains as floats (R x m)."""
        if self.table is not None:
            return np.asarray(self.table, dtype=np.float64)[self.gain_rows]
        G, den = self.gain_exact
        return np.array([[int(v) / den for v in row] for row in G.tolist()],
                        dtype=np.float64).reshape(G.shape)

    @functools.cached_property
    def gain_exact(self) -> tuple[np.ndarray, int]:
        """The rows' gains exactly: (G, den), G an object array of integers (R x m)."""
        table = self.table_exact
        if table is None:
            raise ValueError("this LP has no exact gains")
        if isinstance(table, Scaled):
            return table.num[self.gain_rows], table.den
        picked = [[Fraction(v) for v in table[int(i)]] for i in self.gain_rows]
        den = math.lcm(*(v.denominator for row in picked for v in row))
        return np.array([[int(v * den) for v in row] for row in picked],
                        dtype=object).reshape(len(picked), -1), den

    def exact_rows(self) -> int:
        """The rows of the exact standard form: the live columns and the block's rows."""
        return int(self.channel.live(exact=True).size) + int(self.rows.size)


@record(eq=False)
class OwnBitBlock:
    """One sub-problem of the worst case on all inputs, as the LP that is solved and how
    its solutions map back (`block_on_inputs`): `lp`; `lambdas`, the levels of its channel's
    factors; `rows`, the problem's input of each of its rows; `columns`, for every tau of
    the problem, the LP's column (None: the same)."""

    lp: WorstLp
    lambdas: tuple
    rows: np.ndarray
    columns: np.ndarray | None

    def lift(self, rule: np.ndarray) -> np.ndarray:
        """The LP's rule on every tau of the problem."""
        return rule if self.columns is None else rule[self.columns]

    def restrict(self, rule: np.ndarray) -> np.ndarray:
        """A rule of the problem that `lift` made (the same on both released own bits) on
        the LP's columns."""
        if self.columns is None:
            return rule
        _, first = np.unique(self.columns, return_index=True)
        return rule[first]


def block_on_inputs(lambdas: Sequence, gain: np.ndarray, party: int,
                    bit: int | None) -> OwnBitBlock:
    """The worst-case LP of the observer (`bit` None) on every input, or of party `party`'s
    own bit `bit` (1-based, x1 most significant) on the other parties' inputs. With its
    bit fixed at b, the party's released bit is independent of the others':
    P[(b, x'), (j, tau')] = S_i[b, j] P'[x', tau'], so a rule Q' on tau' is the rule
    Q[(j, tau'), y] = Q'[tau', y] with the same accuracy on every row, and any Q gives
    Q'[tau', y] = sum_j S_i[b, j] Q[(j, tau'), y] with the same accuracy: the same optimum
    (KOV eq. 4), on half the columns and without the party's own level; a prior on x' is
    one on the inputs with own bit b, with the same bound (S_i's rows sum to 1). The same
    reduction on orbits is theory/orbits/space.py's `without_class`."""
    k = len(lambdas)
    if bit is None or k < 2:
        relevant = None if bit is None else ((np.arange(1 << k) >> (k - party)) & 1) == bit
        lp = WorstLp.over_inputs(lambdas, gain, relevant)
        return OwnBitBlock(lp, tuple(lambdas), lp.rows, None)
    low = k - party  # the own bit's place from the least significant end
    taus = np.arange(1 << k)
    rows = taus[((taus >> low) & 1) == bit]
    columns = ((taus >> (low + 1)) << low) | (taus & ((1 << low) - 1))
    others = block_lambdas(lambdas, party)
    return OwnBitBlock(WorstLp.over_inputs(others, np.asarray(gain)[rows]), others, rows,
                       columns)


def block_lambdas(lambdas: Sequence, party: int) -> tuple:
    """The levels of an agent's worst-case blocks on all inputs (`block_on_inputs`): every
    party's for the observer (party 0), the other parties' for a party."""
    if party == 0 or len(lambdas) < 2:
        return tuple(lambdas)
    return (*lambdas[:party - 1], *lambdas[party:])


# --------------------------------------------------------------------------- exact


@record(eq=False)
class StandardForm:
    """maximise t, rows z = rhs, z >= 0, all integers: Q[j, y] at j * m + y for the live
    columns j, t at T * m, the rows' slacks after; the block's rows first (each scaled to
    integers), then sum_y Q[j, y] = 1. `crash` is a feasible basis."""

    rows: list[list[int]]
    rhs: list[int]
    cost: list[int]
    crash: list[int]
    live: np.ndarray
    scales: list[int]  # the block's row a is (its row over the rationals) * scales[a]


def standard_form(lp: WorstLp, start: Sequence[int] | None = None) -> StandardForm:
    """The exact standard form; the crash basis takes output start[c] (default 0) in every
    column c, t at the least accuracy that rule gives, and every other row's slack."""
    num, den = lp.channel.exact()
    G, gden = lp.gain_exact
    live = lp.channel.live(exact=True)
    R, T, m = int(lp.rows.size), int(live.size), lp.m
    width = T * m + 1 + R
    sub = num[:, live]
    choice = [0 if start is None else int(start[int(c)]) for c in live.tolist()]
    rows, acc, scales = [], [], []
    for a in range(R):
        g = [int(v) for v in G[a].tolist()]
        row = [int(c) * gy for c in sub[a].tolist() for gy in g]
        scale = int(den[a]) * gden
        scales.append(scale)
        row += [-scale] + [0] * R
        row[T * m + 1 + a] = -scale
        rows.append(row)
        acc.append(Fraction(sum(row[j * m + choice[j]] for j in range(T)), scale))
    for j in range(T):
        row = [0] * width
        row[j * m:(j + 1) * m] = [1] * m
        rows.append(row)
    worst = min(range(R), key=lambda a: acc[a])
    crash = [j * m + choice[j] for j in range(T)] + [T * m]
    crash += [T * m + 1 + a for a in range(R) if a != worst]
    cost = [0] * width
    cost[T * m] = 1
    return StandardForm(rows, [0] * R + [1] * T, cost, crash, live, scales)


def float_twin(form: StandardForm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The integer rows as floats, each divided by its largest magnitude (int / int rounds
    correctly and never overflows): the same LP, for a float basis."""
    out = np.zeros((len(form.rows), len(form.cost)))
    rhs = np.zeros(len(form.rows))
    for r, (row, b) in enumerate(zip(form.rows, form.rhs, strict=True)):
        top = max(max(abs(v) for v in row), abs(b)) or 1
        out[r] = [v / top for v in row]
        rhs[r] = b / top
    return out, rhs, np.array(form.cost, dtype=np.float64)


@record(eq=False)
class ExactWorst:
    """An exact optimum of one block: the rule Q[c][y] over every column (columns outside
    the LP decide the first output), the prior's masses on the rows (summing to 1), the
    value and the optimal basis (a start at other lambdas)."""

    rule: list[list[Fraction]]
    masses: list[Fraction]
    value: Fraction
    basis: tuple[int, ...]


def pivot_budget(work: int, rows: int) -> int:
    """The pivots an exact simplex on `rows` rows gets for `work`: each pivot solves two
    rows x rows integer systems, about rows^3 operations on integers that grow with the
    lambdas' powers (measured: 114 rows, parity at lambdas 4/3 and 5/2 in classes of 2
    and 18, 20 ms a pivot), at least 4."""
    return max(4, work // max(rows, 1) ** 3)


def solve_exact(lp: WorstLp, *, basis: Sequence[int] | None = None,
                basis_finder: BasisFinder | None = None,
                start: Sequence[int] | None = None,
                pivot_work: int | None = None) -> ExactWorst:
    """The LP solved exactly (module docstring), from `basis`, else the float twin's basis,
    else the crash basis (always feasible; an ExactLpError there propagates). With
    `pivot_work`, each start has `pivot_budget(pivot_work, rows)` pivots and a PivotLimit
    ends the solve (another start would pay as much again)."""
    from dpverify.theory.exact_lp import (  # exact solves only
        ExactLpError,
        PivotLimit,
        simplex_from_basis,
    )

    form = standard_form(lp, start)
    limit = {} if pivot_work is None else {
        "max_pivots": pivot_budget(pivot_work, len(form.rows))}
    starts: list[Sequence[int] | None] = [basis] if basis is not None else []
    if basis_finder is not None:
        starts.append(basis_finder(*float_twin(form)))
    starts.append(form.crash)
    solution = None
    for begin in starts:
        if begin is None:
            continue
        try:
            solution = simplex_from_basis(form.rows, form.rhs, form.cost, list(begin),
                                          **limit)
            break
        except ExactLpError as exc:
            if begin is form.crash or (limit and isinstance(exc, PivotLimit)):
                raise
    assert solution is not None
    m, R = lp.m, int(lp.rows.size)
    rule = [[Fraction(int(y == 0)) for y in range(m)] for _ in range(lp.channel.columns)]
    for j, c in enumerate(form.live.tolist()):
        rule[c] = [solution.z[j * m + y] for y in range(m)]
    # rho_a = -y_a >= 0 for the rows over the rationals (an integer row's dual is y_a /
    # scale_a); they sum to 1 when t is basic (and are normalised when the optimum is 0
    # and t is not)
    masses = [-v * s for v, s in zip(solution.y[:R], form.scales, strict=True)]
    total = sum(masses, Fraction(0))
    return ExactWorst(rule, [v / total for v in masses], solution.value, solution.basis)


def rule_value(lp: WorstLp, rule: Sequence[Sequence]) -> Fraction:
    """min over the rows a of sum_{c, y} C[a, c] g[a, y] Q[c, y], exactly: what an explicit
    rule Q (over every column) proves, `value >= rule_value`."""
    num, den = lp.channel.exact()
    G, gden = lp.gain_exact
    qden = math.lcm(*(Fraction(v).denominator for row in rule for v in row))
    Q = np.array([[int(Fraction(v) * qden) for v in row] for row in rule], dtype=object)
    per_row = np.zeros(num.shape[0], dtype=object)
    for chunk in _chunks(num.shape[1]):  # bounded temporaries: C may have 2^22 entries
        H = Q[chunk].dot(G.T)  # (chunk, R): sum_y Q[c, y] g[a, y]
        per_row = per_row + (num[:, chunk] * H.T).sum(axis=1)
    return min(Fraction(int(v), int(d) * gden * qden)
               for v, d in zip(per_row.tolist(), den.tolist(), strict=True))


def prior_bound(lp: WorstLp, masses: Sequence) -> Fraction:
    """sum_c max_y sum_a rho_a C[a, c] g[a, y] for masses rho on the rows, exactly: an
    upper bound by weak duality (rho is normalised here)."""
    total = sum((Fraction(p) for p in masses), Fraction(0))
    if total <= 0:
        raise ValueError("a prior needs positive mass")
    num, den = lp.channel.exact()
    G, gden = lp.gain_exact
    weights = [Fraction(p) / int(d) for p, d in zip(masses, den.tolist(), strict=True)]
    wden = math.lcm(*(w.denominator for w in weights))
    pi = np.array([int(w * wden) for w in weights], dtype=object)
    best = 0
    for chunk in _chunks(num.shape[1]):
        scores = (num[:, chunk] * pi[:, None]).T.dot(G)  # (chunk, m)
        best += sum(scores.max(axis=1).tolist())
    return Fraction(int(best), gden * wden) / total


def _chunks(count: int, size: int = 4096) -> list[slice]:
    return [slice(begin, min(begin + size, count)) for begin in range(0, count, size)]


# --------------------------------------------------------------------------- floats


@record(eq=False)
class FloatWorst:
    """A float solve: the rule over every column (raw; columns outside the LP decide the
    first output, columns not generated are 0), the prior's masses on the rows (raw duals,
    not clipped), the LP's objective, and the solution (its status says why it failed)."""

    rule: np.ndarray
    masses: np.ndarray
    objective: float
    solution: LpSolution

    @property
    def ok(self) -> bool:
        return self.solution.optimal


@record(eq=False)
class _Built:
    program: LinearProgram
    q: np.ndarray  # LP column of Q[j, y] per live column j and output y (-1: not in the LP)
    x_rows: np.ndarray
    scale: np.ndarray


def _coefficients(lp: WorstLp, live: np.ndarray, scale_rows: bool):
    coef = lp.channel.floats()[:, live][:, :, None] * lp.gain[:, None, :]  # [a, j, y]
    scale = np.ones(coef.shape[0])
    if scale_rows:  # row a reads acc_a(Q) - t >= 0: scaling it by 1 / c_a > 0 changes
        scale = np.max(np.abs(coef.reshape(coef.shape[0], -1)), axis=1)  # nothing
        scale[scale == 0] = 1.0
        coef = coef / scale[:, None, None]
    return coef, scale


def _dense(lp: WorstLp, coef: np.ndarray, scale: np.ndarray, pairs, name: str,
           drop_tiny: bool, sums_first: bool = False, prescaled: bool = False) -> _Built:
    """Q (the pairs (j, y) in this order; default all, column by column), then t; the
    rows, then the sums (or the sums first). `prescaled`: the rows were scaled here, and
    HiGHS's simplex does not scale them again (lp/model.py)."""
    R, T, m = coef.shape
    js, ys = (np.repeat(np.arange(T), m), np.tile(np.arange(m), T)) if pairs is None else (
        np.array([j for j, _ in pairs], dtype=np.intp), np.array([y for _, y in pairs],
                                                                   dtype=np.intp))
    b = LpBuilder()
    q = b.add_cols(js.size)
    t = b.add_cols(1, cost=1.0, lo=-np.inf)
    first = b.add_rows(T, 1.0, 1.0) if sums_first else None
    x_rows = b.add_rows(R, 0.0, np.inf)
    b.add_matrix(x_rows, q, coef[:, js, ys])
    b.add(x_rows, t[0], -1.0 / scale)
    sums = b.add_rows(T, 1.0, 1.0) if first is None else first
    b.add(sums[js], q, 1.0)
    index = np.full((T, m), -1)
    index[js, ys] = q
    return _Built(b.build(maximize=True, name=name, drop_tiny=drop_tiny, prescaled=prescaled),
                  index, x_rows, scale)


def _chain(lp: WorstLp, name: str, drop_tiny: bool = False) -> _Built:
    """The chain form (lp/builder.py): per output y, Q[., y] mixed by P's factors."""
    factors = lp.channel.factors
    if factors is None:
        raise ValueError("the chain form needs a Kronecker channel (over_inputs)")
    rows, gain = lp.rows, lp.gain
    b = LpBuilder()
    x_rows = b.add_rows(rows.size, 0.0, np.inf)
    blocks, sums = [], None
    for y in range(lp.m):
        q, z = b.chain(factors)
        b.add(x_rows, z[rows], gain[:, y])
        blocks.append(q)
        if sums is None:
            sums = b.add_rows(q.size, 1.0, 1.0)
        b.add(sums, q, 1.0)
    t = b.add_cols(1, cost=1.0, lo=-np.inf)
    b.add(x_rows, t, -1.0)
    return _Built(b.build(maximize=True, name=name, drop_tiny=drop_tiny),
                  np.stack(blocks, axis=1), x_rows, np.ones(rows.size))


def _read(lp: WorstLp, built: _Built, live: np.ndarray, sol: LpSolution) -> FloatWorst:
    rule = np.zeros((lp.channel.columns, lp.m))
    rule[:, 0] = 1.0
    rule[live] = 0.0
    if sol.optimal:
        inside = built.q >= 0
        block = np.zeros(built.q.shape)
        block[inside] = sol.x[built.q[inside]]
        rule[live] = block
        masses = -np.asarray(sol.row_duals[built.x_rows]) / built.scale
    else:
        masses = np.full(lp.rows.size, np.nan)
    return FloatWorst(rule, masses, sol.objective, sol)


def solve_float(lp: WorstLp, solve: Solve, *, form: str = LpForm.DENSE, scale_rows: bool = False,
                drop_tiny: bool = False, name: str = "rr-worst",
                by_output: bool = False, sums_first: bool = False) -> FloatWorst:
    """The LP in floats, in `chain` form (over_inputs only) or `dense`, rows optionally
    scaled to a largest entry of 1 (`scale_rows`; the masses are scaled back, and HiGHS's
    simplex does not scale the LP again: measured on the 906 sub-cube LPs of 76 members of
    the families without symmetry at k = 5 to 9, 4.8 s with its scaling and 1.9 s without,
    the slowest 0.52 s and 0.10 s, 4 time limits with it and none without, the optima
    within 1.4e-9). The dense form orders Q column by column, or output by output
    (`by_output`, as the chain form and the relaxed LP do), and its rows before the sums
    (or after: `sums_first`). The order changes nothing but the path of the solver: the
    callers keep theirs, so that their float values stay what they were to the last
    bit."""
    if form == LpForm.CHAIN:
        live = np.arange(lp.channel.columns)
        built = _chain(lp, name, drop_tiny)
    else:
        live = lp.channel.live(exact=False)
        coef, scale = _coefficients(lp, live, scale_rows)
        pairs = None
        if by_output:
            pairs = [(j, y) for y in range(coef.shape[2]) for j in range(coef.shape[1])]
        built = _dense(lp, coef, scale, pairs, name, drop_tiny, sums_first,
                       prescaled=scale_rows)
    return _read(lp, built, live, solve(built.program))


def solve_float_columns(lp: WorstLp, solve: Solve, *, name: str, first: int = 3,
                        rounds: int = 30) -> FloatWorst:
    """The dense LP (rows scaled, tiny entries dropped) by column generation over the pairs
    (j, y): each column starts with its `first` best outputs under an even weighting of the
    rows, and a pair joins while its reduced cost (from the duals) is positive."""
    live = lp.channel.live(exact=False)
    coef, scale = _coefficients(lp, live, True)
    T, m = coef.shape[1], coef.shape[2]
    best = np.argsort(-coef.sum(axis=0), axis=1)[:, :min(first, m)]
    pairs = {(int(j), int(y)) for j in range(T) for y in best[j]}
    for _ in range(rounds):
        built = _dense(lp, coef, scale, sorted(pairs), name, True)
        sol = solve(built.program)
        if not sol.optimal:
            break
        duals_x, duals_sum = sol.row_duals[:coef.shape[0]], sol.row_duals[coef.shape[0]:]
        reduced = -(np.einsum("a,ajy->jy", duals_x, coef) + duals_sum[:, None])
        fresh = {(int(j), int(y)) for j, y in zip(*np.nonzero(reduced > 1e-11), strict=True)}
        if not fresh - pairs:
            break
        pairs |= fresh
    return _read(lp, built, live, sol)


__all__ = ["BasisFinder", "Channel", "ExactWorst", "FloatWorst", "OwnBitBlock", "Solve",
           "StandardForm", "WorstLp", "block_lambdas", "block_on_inputs", "float_twin",
           "prior_bound", "rule_value", "solve_exact", "solve_float", "solve_float_columns",
           "spread_exact", "spread_floats", "standard_form"]
