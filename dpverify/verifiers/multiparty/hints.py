"""The float hints of the worst case's exact certificate on all inputs, computed once (in
the memo of `Hints`, memo.py, which this module re-exports).

The hint choice of the worst case on all inputs (`WorstPlan`): the verifier's own hints
when it gave them (RR's float rule, the relaxed LP's prior), else RR's worst-case LP: on
the orbits of the problem's symmetries when they reduce it enough (a symmetric XOR at
k = 10 has 11 orbits), by the dense interior-point method from DENSE_FROM_INPUTS inputs
without symmetry (at an extreme level from the sub-cubes over the extreme parties first,
and beyond the dense method's inputs from them alone: `dense_hints`), else on all inputs
(HiGHS, dense while small, in chain form beyond: `rr_hint`). A party's own bit is a block
on the other parties' inputs (theory/worst_lp.py, `block_on_inputs`), and the inputs the
dense method is given are a block's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from dpverify.defaults import LpForm
from dpverify.errors import SizeLimitError, SolverError
from dpverify.lp.builder import chain_nonzeros
from dpverify.policy import (
    CUBE_FIRST_SECONDS,
    CUBE_FIRST_WORK,
    CUBE_HOPELESS,
    DENSE_FALLBACK_INPUTS,
    DENSE_FALLBACK_SECONDS,
    DENSE_FALLBACK_WIDTH,
    DENSE_FROM_INPUTS,
    DENSE_HINT_NONZEROS,
    DENSE_TARGET_SHARE,
    EARLY_TIES_FREE,
    EARLY_TIES_SECONDS,
    EXTREME_ENTRY,
    MAX_DENSE_INPUTS,
    REDUCED_FACTOR,
    SPLIT_ENTRIES,
    SPLIT_MARGIN,
    SPLIT_PARTIES,
    SPLIT_SECONDS,
    TIES_FROM_INPUTS,
    TIES_SECONDS,
)
from dpverify.records import record
from dpverify.spec.model import AgentSpec, AgentTable, MultipartySpec
from dpverify.theory.certificates import (
    MAX_EXACT_ROWS,
    Orbits,
    WorstHint,
    exact_rows,
    own_bits,
    symmetry_orbits,
    trivial_orbits,
)
from dpverify.theory.exact_rows import clean_distribution, has_mass
from dpverify.theory.worst_lp import WorstLp, block_lambdas, block_on_inputs, solve_float
from dpverify.verifiers.multiparty.memo import Hints
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import AgentResult

if TYPE_CHECKING:
    from dpverify.theory.worst_ipm import DenseWorst
    from dpverify.verifiers.multiparty.reductions import AgentProblem
    from dpverify.verifiers.solving import Solver

__all__ = ["Hints", "WorstPlan", "beyond_floats", "estimate_worst_nonzeros", "worst_plan"]

def estimate_worst_nonzeros(spec: MultipartySpec, agent: AgentSpec, orbits: Orbits,
                            table: AgentTable) -> int:
    """Non-zeros of the float LP a worst-case certificate solves (for the size guard)."""
    n = spec.num_inputs
    m = len(table.outputs)
    reduced = orbits.count * orbits.count * m
    full = m * (chain_nonzeros([2] * spec.parties, [2] * spec.parties) + n + 1) + n
    return reduced if use_reduced(orbits, n) else full


def use_reduced(orbits: Orbits, n: int) -> bool:
    """Whether RR's worst-case LP is solved on input orbits (policy.REDUCED_FACTOR)."""
    return orbits.count < n and orbits.count * orbits.count <= REDUCED_FACTOR * n


@record(eq=False)
class WorstPlan:
    """What a worst-case certificate on all inputs needs: the orbits of its LP, the hints
    the verifier gave (`given`), and RR's own LP solved on demand (`solved`, once per
    agent through the hints' memo)."""

    problem: AgentProblem
    orbits: Orbits
    bits: list
    estimate: int
    given: dict | None
    too_large: SizeLimitError
    hints: Hints

    @property
    def spec(self) -> MultipartySpec:
        return self.problem.spec

    @property
    def party(self) -> int:
        return self.problem.agent.party

    @property
    def fits(self) -> bool:
        return self.estimate <= self.problem.options.nonzero_limit

    def solved(self) -> dict:
        """RR's worst-case LP's hints per sub-problem (the dense IPM without symmetry from
        DENSE_FROM_INPUTS inputs; SizeLimitError beyond --max-nonzeros): solved once."""
        n = self.spec.num_inputs
        unit = self.problem.units.unit
        # a party's blocks leave its own level out (theory/worst_lp.py, block_on_inputs)
        extreme = beyond_floats(block_lambdas(self.spec.lambdas, self.party))
        block = n if self.party == 0 else n // 2  # the inputs of a block's LP
        if self.orbits.count == n and (block <= MAX_DENSE_INPUTS or extreme) and (
                n >= DENSE_FROM_INPUTS or extreme):
            # extreme levels too (policy.EXTREME_ENTRY): the dense method keeps every entry;
            # beyond its inputs, the sub-cubes over the extreme parties alone
            return self.hints.once(("dense-worst", self.party),
                                   lambda: dense_hints(self.spec, unit, self.party, self.bits,
                                                       self.problem.options, self.too_large))
        if not self.fits:
            raise self.too_large
        found = self.hints.once(("rr-worst", self.party, self.orbits.count),
                                lambda: solve_hints(self.spec, unit, self.party, self.orbits,
                                                    self.bits, self.problem.options))
        # None: the hint LP failed on a problem small enough for the exact simplex alone
        return found if found is not None else {b: None for b in self.bits}


def worst_plan(problem: AgentProblem, hints: Hints) -> WorstPlan:
    """The plan of a worst-case certificate on all inputs (WorstPlan)."""
    spec, agent, table = problem.spec, problem.agent, problem.table
    party = agent.party
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    assert keys is not None  # the loader sets one of them
    n = spec.num_inputs
    orbits = symmetry_orbits(keys, table.gain_exact, party)
    if not use_reduced(orbits, n):
        orbits = trivial_orbits(spec.parties)
    estimate = estimate_worst_nonzeros(spec, agent, orbits, table)
    too_large = SizeLimitError(
        f"{spec.source}: the worst-case certificate of {agent.name} needs an LP with "
        f"about {estimate:.3g} non-zeros; the limit is {problem.options.nonzero_limit:,} "
        f"(raise it with --max-nonzeros), and the dense method takes at most "
        f"{MAX_DENSE_INPUTS} inputs without symmetry (a party's own bit: the other "
        "parties' inputs)")
    given = None
    if orbits.count == n and hints.lp is not None and hints.lp.rule is not None:
        given = hints_from_result(spec, party, hints.lp)
    return WorstPlan(problem, orbits, [None] if party == 0 else [0, 1], estimate, given,
                     too_large, hints)


def hints_from_result(spec: MultipartySpec, party: int, result: AgentResult) -> dict | None:
    """Hints on all inputs from the verifier: RR's float rule, the relaxed LP's prior."""
    n = spec.num_inputs
    rule = np.asarray(result.rule, dtype=float)
    pi = None if result.pi is None else np.asarray(result.pi, dtype=float)
    if party == 0:
        return {None: WorstHint(rule=rule, prior=normalised(pi), x_orbits=np.arange(n))}
    out = {}
    bits = own_bits(spec.parties, party)
    for b in (0, 1):
        rel = np.flatnonzero(bits == b)
        prior = None if pi is None else normalised(pi[rel])
        out[b] = WorstHint(rule=rule[b], prior=prior, x_orbits=rel)
    return out


def beyond_floats(lambdas: Sequence[float]) -> bool:
    """Whether some privacy level is extreme (policy.EXTREME_ENTRY): 1/(1 + lambda)
    below it."""
    return any(1.0 / (1.0 + float(lam)) < EXTREME_ENTRY for lam in lambdas)


def dense_hints(spec: MultipartySpec, gain: np.ndarray, party: int, bits: list,
                options: VerifyOptions, too_large: SizeLimitError | None = None) -> dict:
    """Hints on all inputs for a worst case without symmetry on DENSE_FROM_INPUTS inputs
    whose blocks (block_on_inputs: a party's own bit on the other parties' inputs) have at
    most MAX_DENSE_INPUTS, or at an extreme level (beyond_floats), each end the best of
    these, in this order, each tried only while the bracket is wider than
    policy.SPLIT_MARGIN of the tolerance (`enough`):

    * at an extreme level, the sub-cubes over the extreme parties (`cube_hints`,
      theory/worst_candidates.py) within policy.CUBE_FIRST_SECONDS, at the levels whose
      rule may decide (policy.CUBE_HOPELESS);
    * the dense interior-point method (theory/worst_ipm.py) on one BLAS thread, then the
      rule's LP on the best prior's ties when small and brief (policy.EARLY_TIES_*);
    * at an extreme level, the other levels of sub-cubes and the one the time cut short,
      each LP within policy.SPLIT_SECONDS;
    * the dense method once more on every BLAS thread (another path of rounding: its
      stalls follow its rounding; on a busy 2-core machine it took 3-10x the first);
    * the rule's LP on the best prior's ties (worst_ipm.polish_on_ties, within
      policy.TIES_SECONDS, from policy.TIES_FROM_INPUTS inputs on);
    * HiGHS's dense LP (`better_ends`, up to policy.DENSE_FALLBACK_INPUTS inputs);
    * a deterministic rule (a constant one, the prior's Bayes rule) when it is better.

    A party's second own bit takes the first one's bracket where `carried_ends` allows.
    Beyond MAX_DENSE_INPUTS inputs a block only tries the sub-cubes, every level in turn:
    `too_large` (or a SizeLimitError naming the dense method's limit) when they leave the
    bracket wider than the tolerance."""
    from dpverify.theory.worst_candidates import best_candidate  # lazy: dense only

    enough = decisive_width(options)
    levels = block_lambdas(spec.lambdas, party)
    brief = brief_pass(levels, enough) if beyond_floats(levels) else None
    out = {}
    previous = None
    for b in bits:
        block = block_on_inputs(spec.lambdas, gain, party, b)
        lp = block.lp
        found = None if previous is None else carried_ends(*previous, lp, enough)
        if found is None:
            found = block_hints(lp, block.lambdas, options, brief, too_large)
            if found.width > DENSE_FALLBACK_WIDTH:  # a deterministic rule may meet the bound
                better = best_candidate(lp, found.prior, found.lower)
                if better is not None:
                    found = replace(found, lower=better[0], rule=better[1])
        previous = (found, lp)
        out[b] = WorstHint(rule=block.lift(found.rule), prior=found.prior,
                           x_orbits=block.rows)
    return out


def carried_ends(found: DenseWorst, source: WorstLp, target: WorstLp, enough: float
                 ) -> DenseWorst | None:
    """A party's first own bit's bracket `found` (of the LP `source`) carried to its second
    (`target`: the same rows and channel, the other parties' inputs, block_on_inputs) when
    their gains' output columns dominate each other (theory/worst_hints.py `carried`, as on
    orbits: `sum` under `-abs`, `-square` or the indicator, whose own bits' columns are
    shifted by one) and the carried bracket is within `enough`; else None (solve it)."""
    from dpverify.theory.worst_candidates import float_bracket  # lazy: dense only
    from dpverify.theory.worst_hints import DENSE, WorstHints, carried
    from dpverify.theory.worst_ipm import DenseWorst

    if source.gain.shape != target.gain.shape or source.rows.size != target.rows.size:
        return None
    moved = carried(WorstHints(found.rule, found.prior, True, DENSE), source.gain,
                    target.gain)
    if moved is None:
        return None
    lower, upper = float_bracket(target, found.prior, moved.rule)
    if upper - lower > enough:
        return None
    return DenseWorst(found.prior, moved.rule, lower, upper, 0)


def decisive_width(options: VerifyOptions) -> float:
    """The float bracket (gains in [0, 1]) that spares the slower hints: within the
    tolerance by policy.SPLIT_MARGIN, a margin far above the interval certificate's
    rounding (about 1e-16)."""
    return max(DENSE_FALLBACK_WIDTH, SPLIT_MARGIN * float(options.tol))


def dense_target(options: VerifyOptions) -> float:
    """Where the dense method on all inputs stops narrowing: policy.DENSE_TARGET_SHARE of
    the tolerance, never below its own TARGET_WIDTH (theory/worst_ipm.py). At k = 9 its
    last iterations from a tenth of the default tolerance to 1e-11 were 10-30% of its
    time (issue 25's family)."""
    from dpverify.theory.worst_ipm import TARGET_WIDTH  # lazy: where the dense method runs

    return max(TARGET_WIDTH, DENSE_TARGET_SHARE * float(options.tol))


def block_hints(lp: WorstLp, lambdas: Sequence[float], options: VerifyOptions,
                brief: BriefPass | None = None, too_large: SizeLimitError | None = None
                ) -> DenseWorst:
    """The float bracket of one block of `dense_hints`, in its order (there); `brief`, the
    agent's brief pass over the sub-cubes (at an extreme level)."""
    from dpverify.theory.worst_candidates import best_ends  # lazy: dense only
    from dpverify.theory.worst_ipm import dense_again, dense_worst, polish_on_ties

    solve_ = options.solver().tight(1e-10)  # the polish's small LPs
    cube_solve = solve_.at_most(SPLIT_SECONDS)
    enough = decisive_width(options)
    extreme = beyond_floats(lambdas)

    def merged(found: DenseWorst | None, other: DenseWorst | None) -> DenseWorst | None:
        return found if other is None else other if found is None else best_ends(found, other)

    done: set[tuple[int, ...]] = set()  # the levels of sub-cubes solved
    solved: dict = {}  # and their sub-problems, a cut-short level's too (cube_hints)
    found = None
    if lp.channel.columns > MAX_DENSE_INPUTS:  # the sub-cubes alone
        if extreme:
            found = cube_hints(lp, lambdas, cube_solve, enough, done, solved=solved)
        if found is None or found.width > float(options.tol):
            raise too_large or SizeLimitError(
                f"the dense worst-case method takes at most {MAX_DENSE_INPUTS} inputs")
        return found
    if extreme and brief is not None:  # the sub-cubes that may decide, briefly
        found = cube_hints(lp, lambdas, cube_solve, enough, done, brief, solved)
    if found is None or found.width > enough:  # one BLAS thread
        found = merged(found, dense_worst(lp, dense_target(options), solve_, enough=float("inf")))
        if found is not None and found.width > enough and \
                lp.channel.columns >= TIES_FROM_INPUTS:  # the prior's ties, when cheap
            found = polish_on_ties(lp, found, solve_.at_most(EARLY_TIES_SECONDS),
                                   EARLY_TIES_FREE)
    if found is not None and found.width > enough and extreme:
        found = merged(found, cube_hints(lp, lambdas, cube_solve, enough, done,
                                         solved=solved))
    if found is not None and found.width > enough:  # every BLAS thread
        found = merged(found, dense_again(lp, dense_target(options), solve_))
    assert found is not None
    if found.width > enough and lp.channel.columns >= TIES_FROM_INPUTS:  # the prior's ties
        found = polish_on_ties(lp, found, solve_.at_most(TIES_SECONDS))
    if found.width > enough and lp.channel.columns <= DENSE_FALLBACK_INPUTS:
        found = better_ends(lp, found, options, enough)  # then HiGHS's dense LP
    return found


# HiGHS's methods for a sub-cube's LP, the second while the first leaves its own bracket
# open (theory/worst_candidates.py, split_worst)
CUBE_METHODS = ("simplex", "ipm")


@record
class BriefPass:
    """The sub-cubes tried before the dense method (`block_hints`): until `deadline`
    (time.perf_counter(); each LP at most the time left), the levels whose rule may lose at
    most `hopeless` (`rule_loss`) and whose LPs hold at most `most_work` (`cube_work`;
    None: any)."""

    deadline: float
    hopeless: float
    most_work: int | None

    def admits(self, lp: WorstLp, lambdas: Sequence[float], fixed: Sequence[int]) -> bool:
        from dpverify.theory.worst_candidates import rule_loss

        return rule_loss(lambdas, fixed) <= self.hopeless and (
            self.most_work is None or cube_work(lp, len(lambdas), fixed) <= self.most_work)


def brief_pass(lambdas: Sequence[float], enough: float) -> BriefPass:
    """The brief pass of one agent (policy.CUBE_FIRST_*): its time shared by its blocks;
    LPs of any size when at least half the parties are extreme (the dense method stalls
    among many extreme levels: docs/theory.md 3.4)."""
    extreme = sum(1.0 / (1.0 + float(lam)) < EXTREME_ENTRY for lam in lambdas)
    return BriefPass(time.perf_counter() + CUBE_FIRST_SECONDS, CUBE_HOPELESS * enough,
                     None if 2 * extreme >= len(lambdas) else CUBE_FIRST_WORK)


def cube_work(lp: WorstLp, parties: int, fixed: Sequence[int]) -> int:
    """The non-zeros of a level's sub-cube LPs (every row of the block, each against the
    2^(k - |fixed|) columns of its sub-cube, m outputs), times m - 1: HiGHS took 0.2-1
    microseconds a non-zero on two outputs, 1.6-6 on three or four (policy.py)."""
    m = lp.m
    return int(lp.rows.size) * (1 << (parties - len(fixed))) * m * max(m - 1, 1)


class _Spent(Exception):
    """The time of the brief pass is up (cube_hints)."""


def cube_hints(lp: WorstLp, lambdas: Sequence[float], solve: Solver, enough: float,
               done: set[tuple[int, ...]], brief: BriefPass | None = None,
               solved: dict | None = None) -> DenseWorst | None:
    """The best ends of the sub-cubes over the extreme parties at each of
    policy.SPLIT_ENTRIES (each set of parties once: those in `done` are passed over, and
    each level solved joins it), until the bracket is within `enough`; None when no
    level gave one (theory/worst_candidates.py). The `brief` pass takes the levels it
    admits, and ends at the first level that does not finish in its time; `solved`, the
    sub-problems answered by an earlier call on the block (a level the brief pass cut
    short goes on from where it stopped)."""
    from dpverify.theory.worst_candidates import best_ends, split_parties, split_worst

    def briefly(program):
        assert brief is not None
        left = brief.deadline - time.perf_counter()
        if left <= 0:
            raise _Spent
        return solve.at_most(left)(program)

    found = None
    for entry in SPLIT_ENTRIES:
        fixed = tuple(split_parties(lambdas, entry, SPLIT_PARTIES))
        if fixed in done or not fixed or len(fixed) == len(lambdas):
            continue
        if brief is not None and not brief.admits(lp, lambdas, fixed):
            continue
        try:
            cube = split_worst(lp, lambdas, entry, SPLIT_PARTIES,
                               solve if brief is None else briefly, DENSE_FALLBACK_INPUTS,
                               methods=CUBE_METHODS, width=enough, solved=solved)
        except _Spent:
            break
        if cube is None and brief is not None:
            break  # a sub-problem's LP ran out of the time, or failed: after the dense method
        done.add(fixed)
        if cube is not None:
            found = cube if found is None else best_ends(found, cube)
        if found is not None and found.width <= enough:
            break
    return found


def better_ends(lp: WorstLp, found: DenseWorst, options: VerifyOptions,
                good: float = DENSE_FALLBACK_WIDTH) -> DenseWorst:
    """The dense result with each end replaced by HiGHS's solve of the dense LP (rows
    scaled, entries below what HiGHS keeps dropped: any rule and prior are still bounded
    exactly) when better: by the interior point and, while the bracket is still wider than
    `good`, by the simplex (which closed brackets the interior point left at 4e-9 among
    levels of 14 to 27, to 3e-11 in a second)."""
    from dpverify.theory.worst_candidates import dense_lp_ends, with_method

    solve_ = options.solver().at_most(DENSE_FALLBACK_SECONDS).tight(1e-10)
    for method in ("", "simplex"):
        if found.width <= good:
            break
        found = dense_lp_ends(lp, found, with_method(solve_, method), scale_rows=True,
                              drop_tiny=True, name="rr-worst-fallback")
    return found


def normalised(p: np.ndarray | None) -> np.ndarray | None:
    """A float prior hint made a distribution; None (no hint) when it is not finite or has
    no mass to speak of (theory/exact_rows.py)."""
    if p is None or not np.isfinite(p).all() or not has_mass(p, 1e-9):
        return None
    return clean_distribution(p)


def solve_hints(spec: MultipartySpec, gain: np.ndarray, party: int, orbits: Orbits,
                bits: Sequence, options: VerifyOptions) -> dict | None:
    """Float hints per sub-problem; None when an LP failed but the exact simplex can take
    every sub-problem (theory.certificates.MAX_EXACT_ROWS); else the SolverError."""
    out = {}
    try:
        for b in bits:
            out[b] = closer_hint(spec.lambdas, gain, orbits, party, b, options,
                                 rr_hint(spec.lambdas, gain, orbits, party, b, options))
    except SolverError:
        if all(exact_rows(orbits, party, b) <= MAX_EXACT_ROWS for b in bits):
            return None
        raise
    return out


def closer_hint(lambdas: Sequence[float], gain: np.ndarray, orbits: Orbits, party: int,
                bit: int | None, options: VerifyOptions, hint: WorstHint) -> WorstHint:
    """`hint`, HiGHS's LP's on all inputs (rr_hint), with each end replaced by the dense
    method's (`block_hints`) when its float bracket is wider than decides and the dense
    method takes the block: HiGHS's default feasibility (1e-7) left a 7-party observer's
    bracket at 1.4e-7, and the exact certificate's repair then spent 4 s on rational row
    reduction without closing it (issue 25's family, k = 7), where the dense method
    brackets it within 4e-12 in 0.2 s. Hints on orbits are returned as they are; a party's
    own bit is solved on the other parties' inputs (theory/worst_lp.py, `block_on_inputs`)."""
    if orbits.count < gain.shape[0]:
        return hint
    block = block_on_inputs(lambdas, gain, party, bit)
    lp = block.lp
    if lp.channel.columns > MAX_DENSE_INPUTS:
        return hint
    from dpverify.theory.worst_candidates import float_bracket  # lazy: light

    prior = hint.prior if hint.prior is not None else np.full(lp.rows.size, 1.0 / lp.rows.size)
    lower, upper = float_bracket(lp, prior, block.restrict(hint.rule))
    if upper - lower <= decisive_width(options):
        return hint
    dense = block_hints(lp, block.lambdas, options)
    return WorstHint(rule=block.lift(dense.rule) if dense.lower > lower else hint.rule,
                     prior=dense.prior if dense.upper < upper else hint.prior,
                     x_orbits=hint.x_orbits)



def rr_hint(lambdas: Sequence[float], gain: np.ndarray, orbits: Orbits, party: int,
            bit: int | None, options: VerifyOptions) -> WorstHint:
    """RR's worst-case LP (theory/worst_lp.py) in floats, its rule and dual prior: on orbits
    (dense, rows scaled: a row a reads acc_a(Q) - t >= 0, and scaling it changes nothing;
    entries HiGHS cannot keep are dropped: this LP only gives hints, the certificate is
    exact), else on all inputs (a party's own bit on the other parties' inputs,
    `block_on_inputs`), dense while small and in chain form beyond."""
    solve_ = options.solver()
    if orbits.count < gain.shape[0]:
        relevant = None if bit is None else own_bits(len(lambdas), party) == bit
        lp = WorstLp.over_input_orbits(lambdas, orbits, gain, relevant)
        found = solve_float(lp, solve_, form=LpForm.DENSE, scale_rows=True, drop_tiny=True,
                            name="rr-worst-orbits")
        if not found.ok:
            _failed("randomized-response worst-case (orbits)", found)
        return WorstHint(rule=np.clip(found.rule, 0.0, None), prior=normalised(found.masses),
                         x_orbits=lp.rows)
    block = block_on_inputs(lambdas, gain, party, bit)
    lp = block.lp
    # dense while small: HiGHS took 0.1-0.3 s there where the chain form took 0.4-3.5 s
    # (policy.DENSE_HINT_NONZEROS)
    dense = lp.rows.size * lp.channel.columns * lp.m <= DENSE_HINT_NONZEROS
    found = solve_float(lp, solve_, form=LpForm.DENSE if dense else LpForm.CHAIN,
                        scale_rows=dense, drop_tiny=dense, name="rr-worst")
    if not found.ok:
        _failed("randomized-response worst-case", found)
    return WorstHint(rule=block.lift(np.clip(found.rule, 0.0, None)),
                     prior=normalised(found.masses), x_orbits=block.rows)


def _failed(what: str, found) -> None:
    sol = found.solution
    raise SolverError(f"{what} LP for the certificate: {sol.status.value} ({sol.message})")
