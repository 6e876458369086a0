"""The multi-party verifier (Kairouz, Oh, Viswanath 2015, Theorem 3.1).

For each agent and accuracy: the relaxed protocol LP over the 2^k corner points (an upper
bound over every interactive DP protocol) against randomized response with its optimal
decision rule (the candidate). Two independent computations; `optimal` only when both
succeeded and agree within the tolerance.
"""

from __future__ import annotations

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
from dpverify.theory.rr import random_rank_one, rr_channel, segment_grid
from dpverify.verify.lps import BuiltLp, PointFamily, chain_nonzeros, relaxed_lp, rr_worst_lp
from dpverify.verify.options import VerifyOptions, check_limit
from dpverify.verify.result import AgentResult, ProblemResult, Verdict, judge


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


def estimate_nonzeros(spec: MultipartySpec, options: VerifyOptions) -> int:
    """The non-zeros of the largest LP the verifier would build, computed without building."""
    k, n = spec.parties, spec.num_inputs
    largest = 0
    for agent in spec.agents:
        m = _num_outputs(spec, agent)
        labels = m if agent.party == 0 else m * m
        if options.form == "dense":
            relaxed = labels * n * n * 2
            rr = m * n * n
        else:
            relaxed = labels * (chain_nonzeros([2] * k, [2] * k) + 2 * n) + n
            rr = m * (chain_nonzeros([2] * k, [2] * k) + n + 1) + n
        if options.grid > 2:
            g = options.grid
            relaxed += labels * (chain_nonzeros([g] * k, [2] * k) + 2 * n)
        if options.samples:
            relaxed += labels * options.samples * n * 2
        largest = max(largest, relaxed, rr)
    return largest


def check_size(spec: MultipartySpec, options: VerifyOptions) -> int:
    """Refuse (SizeLimitError, exit 3) before building anything too large."""
    return check_limit(spec.source, estimate_nonzeros(spec, options), options,
                       f"parties = {spec.parties}")


def _solve(built: BuiltLp, options: VerifyOptions) -> LpSolution:
    return solve(built.lp, options.backend, time_limit=options.time_limit,
                 threads=options.threads)


def _failure(agent: str, accuracy: str, start: float, what: str, sol: LpSolution,
             relaxed: float | None = None) -> AgentResult:
    return AgentResult(agent, accuracy, relaxed, None, Verdict.ERROR,
                       time.perf_counter() - start,
                       reason=f"{what} LP: {sol.status.value} ({sol.message})")


def verify_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 options: VerifyOptions) -> AgentResult:
    start = time.perf_counter()
    table = tabulate(spec, agent)
    gain = table.gain
    worst = accuracy is Accuracy.WORST
    k = spec.parties
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
    mu = relaxed.row_duals[built.input_rows]
    pi = -relaxed.row_duals[built.worst_rows] if worst else None

    # Candidate: randomized response with its optimal decision rule.
    factors = [rr_channel(lam) for lam in lambdas]
    if not worst:
        if agent.party == 0:
            value, rule = observer_average_rule(lambdas, gain)
        else:
            value, rule = party_average_rule(lambdas, agent.party, gain)
    else:
        masks = [None] if agent.party == 0 else [own_bit_mask(k, agent.party, b) for b in (0, 1)]
        values, rules = [], []
        for mask in masks:
            rr_built = rr_worst_lp(factors, gain, mask, options.form)
            sol = _solve(rr_built, options)
            if not sol.optimal:
                return _failure(agent.name, accuracy.value, start, "randomized-response worst-case",
                                sol, relaxed.objective)
            values.append(sol.objective)
            rules.append(np.clip(np.stack([sol.x[q] for q in rr_built.blocks], axis=1), 0.0, 1.0))
        value = min(values)  # a party's worst case: the minimum over its own bit (KOV eq. 6)
        rule = rules[0] if agent.party == 0 else np.stack(rules)

    verdict, reason = judge(relaxed.objective, value, options.tol)
    extra: dict = {}
    if options.grid >= 2 or options.samples > 0:
        interior = _interior_check(spec, label_gains, worst, relaxed.objective, options)
        extra.update(interior)
        if interior.get("verdict") is not None:
            verdict = max(verdict, interior.pop("verdict"), key=_severity)
            reason = reason or interior.get("note", "")
    result = AgentResult(agent.name, accuracy.value, relaxed.objective, value, verdict,
                         time.perf_counter() - start, reason=reason, rule=rule,
                         outputs=table.outputs, mu=mu, pi=pi, extra=extra)
    if options.certify:
        from dpverify.verify.certify import proof_for  # lazy: exact arithmetic only when asked

        # The certificate is an independent proof; the float rule only serves as a hint.
        extra["proof"] = proof_for(spec, agent, accuracy, result, options)
    return result


def _severity(v: Verdict) -> int:
    return {Verdict.OPTIMAL: 0, Verdict.GAP: 1, Verdict.ERROR: 2}[v]


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
