"""The LP route of the multi-party verifier, method `lp` (Kairouz, Oh, Viswanath 2015,
Theorem 3.1).

For each agent and accuracy: the relaxed protocol LP over the 2^k corner points (an upper
bound over every interactive DP protocol) against randomized response with its optimal
decision rule (the candidate). `optimal` only when both computations succeeded and agree
within the tolerance; `gap` only when a feasible protocol built from the relaxed solution
beats the candidate; anything else is `error`. What the floats cannot decide is settled
exactly (settle.py) by the certificate makers the planner hands over in the hints. The
corner lemma itself is checked apart, with interior points (--grid, --samples), and proved
exactly by certificates (--certify).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from dpverify.defaults import LpForm, Method
from dpverify.lp import LpSolution
from dpverify.lp.builder import chain_nonzeros
from dpverify.lp.highs import SMALL_MATRIX_VALUE
from dpverify.lp.model import LpStatus
from dpverify.policy import DENSE_BELOW_PARTIES, FLOAT_LP_SECONDS
from dpverify.reasons import ReasonCode
from dpverify.spec.model import AgentSpec, MultipartySpec
from dpverify.spec.tables import MAX_TABULATED_PARTIES, tabulated
from dpverify.theory.decision import (
    observer_average_rule,
    own_bit_mask,
    party_average_rule,
    party_label_gains,
)
from dpverify.theory.exact_rows import clean_stochastic
from dpverify.theory.rr import kron_apply, random_rank_one, rr_channel, segment_grid
from dpverify.theory.units import Units
from dpverify.theory.worst_lp import WorstLp, solve_float
from dpverify.verifiers.multiparty.hints import Hints
from dpverify.verifiers.multiparty.lps import (
    BuiltLp,
    PointFamily,
    relaxed_lp,
)
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.multiparty.routes import Outcome
from dpverify.verifiers.multiparty.settle import corner_weights, proof_for, settle
from dpverify.verifiers.options import VerifyOptions, check_limit
from dpverify.verifiers.result import (
    AgentResult,
    Interior,
    Proof,
    Verdict,
    judge,
    worst_verdict,
)
from dpverify.verifiers.solving import Solver


def corner_family(lambdas: Sequence[float]) -> PointFamily:
    """The 2^k corner points c_1 (x) ... (x) c_k: the columns of P_RR (theory.md)."""
    return PointFamily(factors=tuple(rr_channel(lam) for lam in lambdas))


def num_outputs(spec: MultipartySpec, agent: AgentSpec) -> int:
    """|Y| without tabulating when k is large (a lower bound is enough to refuse)."""
    table = tabulated(spec, agent)
    if table is not None:
        return len(table.outputs)
    if agent.outputs is not None:
        return len(agent.outputs)
    fn = agent.function
    if fn.kind == "named" and fn.name == "sum":
        return spec.parties + 1
    return 2


def lp_form(spec: MultipartySpec, agent: AgentSpec, options: VerifyOptions, m: int) -> LpForm:
    """The form of the corner LP: the one --lp-form names, or for `auto` the dense form
    below DENSE_BELOW_PARTIES parties (policy.py: it solves faster there) when its
    non-zeros fit --max-nonzeros, else chain."""
    if options.form != LpForm.AUTO:
        return LpForm(options.form)
    if spec.parties < DENSE_BELOW_PARTIES and \
            form_nonzeros(spec, agent, options, m, LpForm.DENSE) <= options.nonzero_limit:
        return LpForm.DENSE
    return LpForm.CHAIN


def agent_nonzeros(spec: MultipartySpec, agent: AgentSpec, options: VerifyOptions,
                   m: int) -> int:
    """Non-zeros of the largest LP built for one agent with m outputs (in its form)."""
    return form_nonzeros(spec, agent, options, m, lp_form(spec, agent, options, m))


def form_nonzeros(spec: MultipartySpec, agent: AgentSpec, options: VerifyOptions,
                  m: int, form: LpForm) -> int:
    """Non-zeros of the largest LP built for one agent with m outputs in `form`."""
    k, n = spec.parties, spec.num_inputs
    labels = m if agent.party == 0 else m * m
    if form == LpForm.DENSE:
        relaxed = labels * n * n * 2
        rr = m * n * n
    else:
        relaxed = labels * (chain_nonzeros([2] * k, [2] * k) + 2 * n) + n
        rr = m * (chain_nonzeros([2] * k, [2] * k) + n + 1) + n
    if options.grid > 2:
        g = options.grid
        per_label = (n * g**k * 2 if form == LpForm.DENSE
                     else chain_nonzeros([g] * k, [2] * k) + 2 * n)
        relaxed += labels * per_label
    if options.samples:
        relaxed += labels * options.samples * n * 2
    return max(relaxed, rr)


def estimate_nonzeros(spec: MultipartySpec, options: VerifyOptions) -> int:
    """The non-zeros of the largest LP the verifier would build, computed without building."""
    return max(agent_nonzeros(spec, agent, options, num_outputs(spec, agent))
               for agent in spec.agents)


def check_size(spec: MultipartySpec, options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) before building anything too large."""
    return check_limit(spec.source, estimate_nonzeros(spec, options), options,
                       f"parties = {spec.parties}")


def corner_solver(options: VerifyOptions, feasibility_tol: float | None = None) -> Solver:
    """The solver of the corner LPs: a failure is settled exactly (settle.py), so the time
    policy abandons one after FLOAT_LP_SECONDS (verifiers/solving.py), as after any failed
    solve; `feasibility_tol` for the second, tight pass."""
    solver = options.solver().settled_exactly()
    return solver if feasibility_tol is None else solver.tight(feasibility_tol)


def _solve(built: BuiltLp, options: VerifyOptions,
           feasibility_tol: float | None = None) -> LpSolution:
    return corner_solver(options, feasibility_tol)(built.lp)


def _failed(what: str, sol: LpSolution) -> str:
    if sol.status is LpStatus.TIME_LIMIT:
        return (f"the {what} LP did not finish within its time limit ({FLOAT_LP_SECONDS:g} s "
                "unless the API's time_limit sets another)")
    return f"the {what} LP did not solve ({sol.status.value}: {sol.message})"


# HiGHS's default feasibility tolerances (1e-7) are coarser than the default verdict
# tolerance (1e-9): a result that does not agree at first is solved again with these.
TIGHT_FEASIBILITY = 1e-10


def rr_candidate(lambdas: Sequence[float], gain: np.ndarray, party: int, worst: bool,
                  options: VerifyOptions, feasibility_tol: float | None = None):
    """Randomized response with its optimal decision rule: (value, rule) or a failed LP.

    Average: the argmax rules of KOV eqs. (2) and (5). Worst case: the LPs of eqs. (4) and
    (6); their rule is cleaned (clipped, rows normalised) and the value reported is the one
    that rule achieves, recomputed from scratch, not the LP's objective.
    """
    if not worst:
        if party == 0:
            return observer_average_rule(lambdas, gain)
        return party_average_rule(lambdas, party, gain)
    k = len(lambdas)
    factors = [rr_channel(lam) for lam in lambdas]
    masks = [None] if party == 0 else [own_bit_mask(k, party, b) for b in (0, 1)]
    values, rules = [], []
    for mask in masks:
        found = solve_float(WorstLp.over_inputs(lambdas, gain, mask),
                            corner_solver(options, feasibility_tol),
                            form=options.form, name="rr-worst", by_output=True)
        if not found.ok:
            return found.solution
        rule = clean_stochastic(found.rule)
        per_input = (kron_apply(factors, rule) * gain).sum(axis=1)
        values.append(float(per_input[mask].min() if mask is not None else per_input.min()))
        rules.append(rule)
    # a party's worst case: the minimum over its own bit (KOV eq. 4); every rule is a
    # distribution per row (clean_stochastic), so no value is NaN
    return min(values), (rules[0] if party == 0 else np.stack(rules))


@dataclass
class _Floats:
    """The float computations of one (agent, accuracy), on gains normalised to [0, 1]."""

    relaxed: float | None = None
    rr: float | None = None
    rule: np.ndarray | None = None
    mu: np.ndarray | None = None
    pi: np.ndarray | None = None
    theta: np.ndarray | None = None  # the relaxed LP's corner weights theta[s, label]
    failure: str = ""
    timed_out: bool = False  # an LP ran out of time: settle exactly, no second pass


def float_lps_fit(lambdas: Sequence[float]) -> bool:
    """Whether the corner points' entries stay above what HiGHS keeps (1/(1+lambda) >=
    1e-12: epsilon up to about 27.6); beyond, the verdict is settled exactly."""
    return all(1.0 / (1.0 + lam) >= SMALL_MATRIX_VALUE for lam in lambdas)


def _float_pass(lambdas: Sequence[float], gain: np.ndarray, label_gains: np.ndarray,
                party: int, worst: bool, options: VerifyOptions,
                feasibility_tol: float | None = None) -> _Floats:
    """The relaxed LP (upper bound) and RR with its optimal rule (candidate), in floats."""
    out = _Floats()
    built = relaxed_lp(label_gains, [corner_family(lambdas)], worst, options.form)
    relaxed = _solve(built, options, feasibility_tol)
    if relaxed.optimal:
        out.relaxed = relaxed.objective
        out.mu = relaxed.row_duals[built.input_rows]
        out.pi = -relaxed.row_duals[built.worst_rows] if worst else None
        out.theta = np.stack([relaxed.x[b] for b in built.blocks], axis=1)
    else:
        out.failure = _failed("relaxed", relaxed)
        if relaxed.status is LpStatus.TIME_LIMIT:  # settled exactly: no second wait
            out.timed_out = True
            return out
    candidate = rr_candidate(lambdas, gain, party, worst, options, feasibility_tol)
    if isinstance(candidate, LpSolution):
        out.timed_out = candidate.status is LpStatus.TIME_LIMIT
        out.failure = "; ".join(f for f in (out.failure, _failed(
            "randomized-response worst-case", candidate)) if f)
    else:
        out.rr, out.rule = candidate
    return out


def _floats(lambdas: Sequence[float], gain: np.ndarray, label_gains: np.ndarray, party: int,
            worst: bool, options: VerifyOptions) -> tuple[_Floats, Verdict, str]:
    """The float pass, solved again with tight tolerances unless it agrees at first."""
    floats = _float_pass(lambdas, gain, label_gains, party, worst, options)
    verdict, why = _judge(floats, options.tol)
    if verdict is not Verdict.OPTIMAL and not floats.timed_out:
        tight = _float_pass(lambdas, gain, label_gains, party, worst, options,
                            TIGHT_FEASIBILITY)
        again, why_again = _judge(tight, options.tol)
        if tight.relaxed is not None and tight.rr is not None or again is Verdict.OPTIMAL:
            floats, verdict, why = tight, again, why_again
    return floats, verdict, why


def _judge(floats: _Floats, tol: float) -> tuple[Verdict, str]:
    """judge() on normalised values, with a reason a user can read."""
    if floats.relaxed is None or floats.rr is None:
        return Verdict.ERROR, floats.failure or "no value"
    verdict, why = judge(floats.relaxed, floats.rr, tol)
    if verdict is Verdict.GAP:
        why = (f"the float LPs differ by {floats.relaxed - floats.rr:.3g} of the gain's "
               "range")
    elif verdict is Verdict.ERROR:
        why = (f"the float upper bound is below randomized response by "
               f"{floats.rr - floats.relaxed:.3g} of the gain's range (a numerical failure)")
    return verdict, why


def lp_result(problem: AgentProblem, hints: Hints) -> AgentResult:
    """One (agent, accuracy) by the method `lp`: the float LPs on the gains normalised to
    [0, 1] (the GainUnits reduction: no decision depends on the scale of the gains, the
    tolerance is relative to their range), settled exactly (settle.py, by the certificate
    makers the planner put in `hints`, with these floats as their hints) whenever they do
    not agree."""
    start = time.perf_counter()
    spec, agent, accuracy, table = problem.spec, problem.agent, problem.accuracy, problem.table
    options = problem.options
    options = replace(options, form=lp_form(spec, agent, options, len(table.outputs)))
    problem = problem.with_options(options)
    check_limit(spec.source, agent_nonzeros(spec, agent, options, len(table.outputs)),
                options, f"parties = {spec.parties} and {len(table.outputs)} outputs")
    units = problem.units
    unit = units.unit
    worst = problem.worst
    lambdas = spec.lambdas
    label_gains = unit if agent.party == 0 else party_label_gains(unit, agent.party)[0]

    if float_lps_fit(lambdas):
        floats, verdict, why = _floats(lambdas, unit, label_gains, agent.party, worst, options)
    else:
        floats, verdict = _Floats(), Verdict.ERROR
        why = ("a privacy level is beyond what a float LP keeps (1/(1+lambda) below "
               f"{SMALL_MATRIX_VALUE:g})")
    relaxed = None if floats.relaxed is None else units.user(floats.relaxed)
    value = None if floats.rr is None else units.user(floats.rr)
    method, reason, rule = Method.LP, "", floats.rule
    code: ReasonCode | None = None
    proof: Proof | None = None
    interior: Interior | None = None
    if verdict is not Verdict.OPTIMAL:
        hint = AgentResult(agent.name, accuracy.value, relaxed, value, verdict, 0.0,
                           rule=floats.rule, pi=floats.pi)
        witness = None if floats.theta is None else (floats.theta, worst)
        settled = settle(problem, hints.with_lp(hint), why, witness)
        verdict, reason, method = settled.verdict, settled.reason, Method.PROOF
        relaxed, value, code = settled.relaxed, settled.rr, settled.code
        proof = settled.proof
        rule = settled.rule if settled.rule is not None else rule
    elif _imprecise(floats, units):
        # The floats are accurate to about 1e-9 of the gains' range; a value near 0 needs
        # the exact certificate for its digits (the verdict stands either way).
        why = ("the value is small beside the gains' range, so the float LPs give few of "
               "its digits")
        settled = settle(problem, hints.with_lp(None), why)
        if settled.verdict is Verdict.OPTIMAL:
            reason, method = settled.reason, Method.PROOF
            relaxed, value, code = settled.relaxed, settled.rr, settled.code
            proof = settled.proof
            rule = settled.rule if settled.rule is not None else rule
    if options.grid >= 2 or options.samples > 0:
        interior, interior_verdict, note, noted = _interior(problem, hints.with_lp(None),
                                                            label_gains, floats.relaxed)
        if interior_verdict is not None and interior_verdict.rank >= verdict.rank:
            code = noted  # the interior points decide the verdict
        if interior_verdict is not None:
            verdict = worst_verdict([verdict, interior_verdict])
        reason = "; ".join(r for r in (reason, note) if r)
        code = code if code is not None or not note else ReasonCode.NOTE
    result = AgentResult(agent.name, accuracy.value, relaxed, value, verdict,
                         time.perf_counter() - start, reason=reason, rule=rule,
                         outputs=table.outputs, mu=_in_units(floats, units), pi=floats.pi,
                         method=method, proof=proof, interior=interior, code=code)
    if options.certify and proof is None:
        result = replace(result, proof=proof_for(problem, hints.with_lp(result)))
    return result


class LpRoute:
    """The relaxed corner LP against RR's decision LPs (method `lp`): two float
    computations that must agree, settled exactly when they do not. `--method lp`; `auto`
    takes it when no exact route fits or closes, and first for interior points."""

    method = Method.LP

    def fits(self, problem: AgentProblem) -> str | None:
        spec, agent, options = problem.spec, problem.agent, problem.options
        if spec.parties > MAX_TABULATED_PARTIES:
            return f"2^{spec.parties} inputs are too many for the full LP"
        estimate = agent_nonzeros(spec, agent, options, num_outputs(spec, agent))
        if estimate > options.nonzero_limit:
            return (f"the full LP would have about {estimate:.3g} non-zeros (the limit is "
                    f"{options.nonzero_limit:,} non-zeros; raise it with --max-nonzeros)")
        return None

    def run(self, problem: AgentProblem, hints: Hints) -> Outcome:
        """The floats, settled exactly when they do not decide; the routes after it get
        its float result as hints."""
        result = lp_result(problem, hints)
        return Outcome(result, hints.with_lp(result))


LP = LpRoute()


# Below this fraction of the gains' range, a value's float digits are too few (the LPs are
# accurate to about 1e-9 of the range; a value should carry 6 significant digits).
IMPRECISE_FRACTION = 1e-3


def _imprecise(floats: _Floats, units: Units) -> bool:
    """Whether a value (in the user's units) is below IMPRECISE_FRACTION of the range."""
    if floats.relaxed is None or floats.rr is None or units.constant:
        return False
    return min(abs(units.to_user(Fraction(v))) for v in (floats.relaxed, floats.rr)) \
        < Fraction(IMPRECISE_FRACTION) * units.span


def _in_units(floats: _Floats, units: Units) -> np.ndarray | None:
    """The relaxed LP's duals mu for the user's gains (theory/units.py, `dual_to_user`;
    pi uniform for the average)."""
    if floats.mu is None:
        return None
    n = floats.mu.shape[0]
    prior = floats.pi if floats.pi is not None else np.full(n, 1.0 / n)
    return units.dual_to_user(floats.mu, prior)


def interior_families(lambdas: Sequence[float], options: VerifyOptions) -> list[PointFamily]:
    """Rank-one DP points beyond the corners (docs/theory.md, interior points).

    The corners are always included (an m-point grid of each segment contains its end
    points, and random samples are added to the corners), so the optimum can only grow.
    """
    families = [corner_family(lambdas)]
    if options.grid >= 2:
        families = [PointFamily(factors=tuple(segment_grid(lam, options.grid)
                                              for lam in lambdas))]
    if options.samples > 0:
        rng = np.random.default_rng(options.seed)
        families.append(PointFamily(columns=random_rank_one(lambdas, options.samples, rng)))
    return families


def _interior(problem: AgentProblem, hints: Hints, label_gains: np.ndarray,
              corner_optimum: float | None
              ) -> tuple[Interior, Verdict | None, str, ReasonCode | None]:
    """The relaxed LP over grid / sampled rank-one points, against the corner optimum
    (normalised units inside; the reported interior optimum is in the user's units).

    KOV's corner lemma: the corners generate the cone of rank-one DP tensors, so no point
    can raise the optimum. A float rise beyond the tolerance is settled exactly: the exact
    certificate's bound holds for every rank-one DP point, so it refutes the rise, or an
    exact witness confirms it (settle.py); else the verdict is `error` (undecided).
    Returns (the result's interior optimum, a verdict to combine or None, a note, the
    code of the note).
    """
    spec, options, units, worst = problem.spec, problem.options, problem.units, problem.worst
    built = relaxed_lp(label_gains, interior_families(spec.lambdas, options), worst,
                       options.form)
    sol = _solve(built, options)
    agrees = sol.optimal and corner_optimum is not None and \
        abs(sol.objective - corner_optimum) <= options.tol
    if not agrees:  # solve again, tighter; keep the first answer if the second fails
        tight = _solve(built, options, TIGHT_FEASIBILITY)
        sol = tight if tight.optimal or not sol.optimal else sol
    out = Interior(options.grid, options.samples, options.seed,
                   units.user(sol.objective) if sol.optimal else None)
    if sol.optimal and corner_optimum is not None and \
            abs(sol.objective - corner_optimum) <= options.tol:
        return out, None, "", None
    if not sol.optimal:  # no float interior optimum: the certificate bounds every point
        why = f"interior points: {_failed('interior-point', sol)}"
        settled = settle(problem, hints, why)
        if settled.verdict is Verdict.OPTIMAL:
            return out, None, (f"{why}; the exact certificate bounds every rank-one DP "
                               "point by the corner optimum"), ReasonCode.NOTE
        return out, settled.verdict, settled.reason, settled.code
    # a rise (or a fall) in floats: settle it exactly
    columns = np.stack([sol.x[b] for b in built.blocks], axis=1)
    if len(built.blocks) != label_gains.shape[1] or not interior_is_product(options):
        theta = None
    else:
        points = interior_families(spec.lambdas, options)[0].dense()
        theta = corner_weights(spec.lambdas, points @ columns)
    why = "interior points moved the float relaxed optimum"
    settled = settle(problem, hints, why, None if theta is None else (theta, worst))
    if settled.verdict is Verdict.OPTIMAL:
        rise = units.user_width(sol.objective - (corner_optimum or 0.0))
        return out, None, (f"interior points: a float rise of {rise:.3g} is refuted: the "
                           "exact certificate bounds every rank-one DP point"), ReasonCode.NOTE
    return out, settled.verdict, f"interior points: {settled.reason}", settled.code


def interior_is_product(options: VerifyOptions) -> bool:
    """Whether the interior points are one product family (a grid, no samples)."""
    return options.grid >= 2 and options.samples == 0

