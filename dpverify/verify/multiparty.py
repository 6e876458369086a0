"""The multi-party verifier (Kairouz, Oh, Viswanath 2015, Theorem 3.1).

For each agent and accuracy: the relaxed protocol LP over the 2^k corner points (an upper
bound over every interactive DP protocol) against randomized response with its optimal
decision rule (the candidate). `optimal` only when both computations succeeded and agree
within the tolerance; `gap` only when a feasible protocol built from the relaxed solution
beats the candidate; anything else is `error`. The corner lemma itself is checked apart,
with interior points (--grid, --samples), and proved exactly by certificates (--certify).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from dpverify.lp import LpSolution, solve
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.decision import (
    observer_average_rule,
    own_bit_mask,
    party_average_rule,
    party_label_gains,
)
from dpverify.theory.rr import kron_apply, random_rank_one, rr_channel, segment_grid
from dpverify.verify.lps import BuiltLp, PointFamily, chain_nonzeros, relaxed_lp, rr_worst_lp
from dpverify.verify.options import VerifyOptions, check_limit
from dpverify.verify.result import AgentResult, ProblemResult, Verdict, judge, worst_verdict


def corner_family(lambdas: Sequence[float]) -> PointFamily:
    """The 2^k corner points c_1 (x) ... (x) c_k: the columns of P_RR (theory.md)."""
    return PointFamily(factors=tuple(rr_channel(lam) for lam in lambdas))


def _num_outputs(spec: MultipartySpec, agent: AgentSpec) -> int:
    """|Y| without tabulating when k is large (a lower bound is enough to refuse)."""
    if spec.tables.get(agent.name) is not None:
        return len(spec.tables[agent.name].outputs)
    if agent.outputs is not None:
        return len(agent.outputs)
    fn = agent.function
    if fn.kind == "named" and fn.name == "sum":
        return spec.parties + 1
    return 2


def _agent_nonzeros(spec: MultipartySpec, agent: AgentSpec, options: VerifyOptions,
                    m: int) -> int:
    """Non-zeros of the largest LP built for one agent with m outputs."""
    k, n = spec.parties, spec.num_inputs
    labels = m if agent.party == 0 else m * m
    if options.form == "dense":
        relaxed = labels * n * n * 2
        rr = m * n * n
    else:
        relaxed = labels * (chain_nonzeros([2] * k, [2] * k) + 2 * n) + n
        rr = m * (chain_nonzeros([2] * k, [2] * k) + n + 1) + n
    if options.grid > 2:
        g = options.grid
        per_label = (n * g**k * 2 if options.form == "dense"
                     else chain_nonzeros([g] * k, [2] * k) + 2 * n)
        relaxed += labels * per_label
    if options.samples:
        relaxed += labels * options.samples * n * 2
    return max(relaxed, rr)


def estimate_nonzeros(spec: MultipartySpec, options: VerifyOptions) -> int:
    """The non-zeros of the largest LP the verifier would build, computed without building."""
    return max(_agent_nonzeros(spec, agent, options, _num_outputs(spec, agent))
               for agent in spec.agents)


def check_size(spec: MultipartySpec, options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) before building anything too large."""
    return check_limit(spec.source, estimate_nonzeros(spec, options), options,
                       f"parties = {spec.parties}")


def _solve(built: BuiltLp, options: VerifyOptions,
           feasibility_tol: float | None = None) -> LpSolution:
    return solve(built.lp, options.backend, time_limit=options.time_limit,
                 threads=options.threads, feasibility_tol=feasibility_tol)


def _failure(agent: str, accuracy: str, start: float, what: str, sol: LpSolution,
             relaxed: float | None = None) -> AgentResult:
    return AgentResult(agent, accuracy, relaxed, None, Verdict.ERROR,
                       time.perf_counter() - start,
                       reason=f"{what} LP: {sol.status.value} ({sol.message})")


# HiGHS's default feasibility tolerances (1e-7) are coarser than the default verdict
# tolerance (1e-9): a result that does not agree at first is solved again with these.
TIGHT_FEASIBILITY = 1e-10


def _rr_candidate(lambdas: Sequence[float], gain: np.ndarray, party: int, worst: bool,
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
        built = rr_worst_lp(factors, gain, mask, options.form)
        sol = _solve(built, options, feasibility_tol)
        if not sol.optimal:
            return sol
        rule = np.clip(np.stack([sol.x[q] for q in built.blocks], axis=1), 0.0, None)
        rule /= rule.sum(axis=1, keepdims=True)
        per_input = (kron_apply(factors, rule) * gain).sum(axis=1)
        values.append(float(per_input[mask].min() if mask is not None else per_input.min()))
        rules.append(rule)
    # a party's worst case: the minimum over its own bit (KOV eq. 6)
    return min(values), (rules[0] if party == 0 else np.stack(rules))


def _feasible_value(sol: LpSolution, built: BuiltLp, label_gains: np.ndarray,
                    lambdas: Sequence[float], worst: bool) -> float:
    """The accuracy of a protocol that is exactly feasible, made from the relaxed solution.

    theta is clipped at 0 and each corner's weights normalised over the labels; since the
    corners are the columns of P_RR and P_RR 1 = 1, every input's labels then sum to 1.
    A `gap` is claimed only when such a protocol beats the candidate: a witness, not noise.
    """
    factors = [rr_channel(lam) for lam in lambdas]
    theta = np.clip(np.stack([sol.x[b] for b in built.blocks], axis=1), 0.0, None)
    total = theta.sum(axis=1)
    theta[total <= 0, 0] = 1.0
    theta /= theta.sum(axis=1, keepdims=True)
    per_input = (kron_apply(factors, theta) * label_gains).sum(axis=1)
    return float(per_input.min() if worst else per_input.mean())


def verify_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 options: VerifyOptions) -> AgentResult:
    start = time.perf_counter()
    table = tabulate(spec, agent)
    check_limit(spec.source, _agent_nonzeros(spec, agent, options, len(table.outputs)),
                options, f"parties = {spec.parties} and {len(table.outputs)} outputs")
    gain = table.gain
    worst = accuracy is Accuracy.WORST
    lambdas = spec.lambdas
    if agent.party == 0:
        label_gains = gain
    else:
        label_gains, _ = party_label_gains(gain, agent.party)

    # Upper bound: the relaxed protocol LP over the corner points.
    built = relaxed_lp(label_gains, [corner_family(lambdas)], worst, options.form)
    relaxed = _solve(built, options)
    if not relaxed.optimal:
        return _failure(agent.name, accuracy.value, start, "relaxed", relaxed)
    # Candidate: randomized response with its optimal decision rule.
    candidate = _rr_candidate(lambdas, gain, agent.party, worst, options)
    if isinstance(candidate, LpSolution):
        return _failure(agent.name, accuracy.value, start, "randomized-response worst-case",
                        candidate, relaxed.objective)
    value, rule = candidate
    verdict, reason = judge(relaxed.objective, value, options.tol)

    if verdict is not Verdict.OPTIMAL:
        # Solve again with tighter feasibility tolerances before claiming anything.
        tight = _solve(built, options, TIGHT_FEASIBILITY)
        again = _rr_candidate(lambdas, gain, agent.party, worst, options, TIGHT_FEASIBILITY)
        if tight.optimal and not isinstance(again, LpSolution):
            relaxed, (value, rule) = tight, again
            verdict, reason = judge(relaxed.objective, value, options.tol)
    if verdict is Verdict.GAP:
        witness = _feasible_value(relaxed, built, label_gains, lambdas, worst)
        if witness - value > options.tol:
            reason = (f"a feasible DP protocol (the relaxed LP's solution, repaired) reaches "
                      f"{witness:.12g}, beating randomized response by {witness - value:.3g}")
        else:
            verdict = Verdict.ERROR
            reason = (f"undecided: the LPs differ by {relaxed.objective - value:.3g}, within "
                      f"the solver's accuracy, and no feasible protocol found beats "
                      f"randomized response by more than --tol")
    mu = relaxed.row_duals[built.input_rows]
    pi = -relaxed.row_duals[built.worst_rows] if worst else None

    extra: dict = {}
    if options.grid >= 2 or options.samples > 0:
        interior = _interior_check(spec, label_gains, worst, relaxed.objective, options)
        interior_verdict = interior.pop("verdict", None)
        note = interior.pop("note", "")
        extra.update(interior)
        if interior_verdict is not None:
            verdict = worst_verdict([verdict, interior_verdict])
            reason = "; ".join(r for r in (reason, note) if r)
    result = AgentResult(agent.name, accuracy.value, relaxed.objective, value, verdict,
                         time.perf_counter() - start, reason=reason, rule=rule,
                         outputs=table.outputs, mu=mu, pi=pi, extra=extra)
    if options.certify:
        from dpverify.verify.certify import proof_for  # lazy: exact arithmetic only when asked

        # The certificate is an independent, exactly checked proof; the float rule is a hint.
        proof = proof_for(spec, agent, accuracy, result, options)
        extra["proof"] = proof
        if proof.get("status") == "proved-optimal" and verdict is not Verdict.OPTIMAL:
            result = dataclasses.replace(
                result, verdict=Verdict.OPTIMAL,
                reason=f"the float LPs disagree ({reason}); the exact certificate proves "
                       "optimality")
    return result


def interior_families(lambdas: Sequence[float], options: VerifyOptions) -> list[PointFamily]:
    """Rank-one DP points beyond the corners (issue: "interior rank-one points").

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


def _interior_check(spec: MultipartySpec, label_gains: np.ndarray, worst: bool,
                    corner_optimum: float, options: VerifyOptions) -> dict:
    """The relaxed LP over grid / sampled rank-one points, against the corner optimum.

    KOV's corner lemma: the corners generate the cone of rank-one DP tensors, so no point
    can raise the optimum. A rise beyond the tolerance would contradict it: verdict `gap`.
    """
    built = relaxed_lp(label_gains, interior_families(spec.lambdas, options), worst,
                       options.form)
    sol = _solve(built, options)
    if not sol.optimal:
        return {"interior_optimum": None, "verdict": Verdict.ERROR,
                "note": f"interior-point LP: {sol.status.value} ({sol.message})"}
    out: dict = {"interior_optimum": sol.objective,
                 "interior_points": {"grid": options.grid, "samples": options.samples,
                                     "seed": options.seed}}
    rise = sol.objective - corner_optimum
    if abs(rise) > options.tol:  # solve both again, tighter, before claiming anything
        tight = _solve(built, options, TIGHT_FEASIBILITY)
        corners = relaxed_lp(label_gains, [corner_family(spec.lambdas)], worst, options.form)
        tight_corners = _solve(corners, options, TIGHT_FEASIBILITY)
        if tight.optimal and tight_corners.optimal:
            out["interior_optimum"] = tight.objective
            rise = tight.objective - tight_corners.objective
    if rise > options.tol:
        out["verdict"] = Verdict.GAP
        out["note"] = (f"interior rank-one points raise the relaxed optimum by {rise:.3g}: "
                       "this would contradict the corner lemma of Kairouz-Oh-Viswanath")
    elif rise < -options.tol:
        out["verdict"] = Verdict.ERROR
        out["note"] = (f"the LP with more points has a smaller optimum (by {-rise:.3g}): "
                       "a numerical failure")
    return out


def verify_multiparty(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    header = {"parties": spec.parties, "lambdas": list(spec.lambdas)}
    check_size(spec, options)
    results = [verify_agent(spec, agent, accuracy, options)
               for agent in spec.agents for accuracy in spec.accuracies]
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), header)
