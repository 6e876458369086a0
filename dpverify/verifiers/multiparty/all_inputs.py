"""RR's exact certificate on all 2^k inputs (method `proof`, `dpverify-certificate/1`;
docs/theory.md, "Certificates"), a route and a certificate maker (routes.py).

The average case needs no LP (RR's argmax rule and the uniform prior). The worst case
takes its hints from the verifier when it gave them (hints.lp) and from RR's worst-case
LP (hints.py, WorstPlan); its exact simplex starts from HiGHS's basis. Where exact
rationals are the cost (many parties: policy.INTERVAL_FROM_PARTIES*) `verify` builds the
same certificate in outward-rounded floats first (theory/certificates/interval.py). Every
certificate is checked exactly by the construction before it is returned;
`dpverify.checker` checks it again, independently.
"""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpverify.defaults import Method
from dpverify.errors import SizeLimitError, SolverError
from dpverify.policy import (
    INTERVAL_FROM_PARTIES,
    INTERVAL_FROM_PARTIES_EPSILON,
    PROOF_HINT_NONZEROS,
)
from dpverify.reasons import ReasonCode
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import MAX_TABULATED_PARTIES
from dpverify.theory.certificates import PROVED, average_certificate, own_bits
from dpverify.theory.certificates.format import FORMAT, Certificate
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.verifiers.multiparty.memo import Hints
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.multiparty.routes import Outcome, decided
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import AnyCertificate, kind, unproved
from dpverify.verifiers.result import AgentResult, Proof, Verdict

if TYPE_CHECKING:
    from dpverify.theory.certificates.interval import IntervalCertificate
    from dpverify.verifiers.multiparty.hints import WorstPlan

__all__ = ["PROOF", "ProofRoute", "float_rule"]


def float_rule(cert: AnyCertificate) -> np.ndarray | None:
    """The certificate's decision rule on all inputs as floats (None for a rule on orbits:
    it has no row per input)."""
    if kind(cert) == "interval":  # an IntervalCertificate
        return None if cert.classes is not None else cert.rule  # type: ignore[union-attr]
    if cert.format_name != FORMAT:  # a rule per corner orbit (dpverify-orbit-certificate/1)
        return None
    return np.array(cert.decision, dtype=np.float64)


def exact_certificate(problem: AgentProblem, hints: Hints, *, fine: bool = True,
                      quick: bool = False) -> Certificate:
    """RR's exact certificate on all 2^k inputs (dpverify-certificate/1), at the fine
    brackets of e^eps or (not `fine`) the coarse ones the tolerance allows; `quick`
    (verify's attempt; certify proves): a worst case's checked bracket within half of
    --tol stands where the exact work would pass its budget (certificates/worst.py
    `_worst_subproblem`: the rule's repair, policy.QUICK_REPAIR_WORK, and the exact
    simplex, policy.QUICK_PIVOT_WORK; with lambdas from epsilon no exact simplex)."""
    spec, agent, table = problem.spec, problem.agent, problem.table
    if fine:
        lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    else:
        lower, upper = coarse_brackets(spec.lambdas_exact, spec.epsilons_exact,
                                       problem.options.tol)
    exact = lower == upper
    party = agent.party
    if not problem.worst:
        return average_certificate(agent.name, table.outputs, table.gain_exact, party,
                                   lower, upper, exact)
    # lazy: the worst case's plan, certificate and LP (an average case needs none of them)
    from dpverify.theory.certificates.worst import worst_certificate
    from dpverify.verifiers.multiparty.hints import worst_plan

    plan = worst_plan(problem, hints)
    finder = problem.options.solver().basis_finder()
    # in normalised gains: --tol is relative to their range (problem.tol is in the user's)
    quick_width = Fraction(problem.options.tol) / 2 if quick else None
    cert = worst_certificate(agent.name, table.outputs, table.gain_exact, party, lower,
                             upper, exact, plan.orbits, plan.given or plan.solved(), finder,
                             quick_width)
    if plan.given is not None and cert.status != PROVED and exact and plan.fits:
        # the verifier's hints (relaxed-LP prior) did not close it: RR's own LP and dual
        cert = worst_certificate(agent.name, table.outputs, table.gain_exact, party,
                                 lower, upper, exact, plan.orbits, plan.solved(), finder,
                                 quick_width)
    return cert


def interval_certificate(problem: AgentProblem, hints: Hints) -> IntervalCertificate:
    """The certificate's bracket in outward-rounded arithmetic (`verify`; `certify` keeps
    exact certificates): at the fine brackets of e^eps (floats cost nothing more there);
    the average case directly; the worst case from the float hints (RR's worst-case LP:
    its rule, and the better of its prior and the uniform one), rationalised."""
    from dpverify.theory.certificates.interval import average_interval  # lazy: where made

    spec, agent, table = problem.spec, problem.agent, problem.table
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    if not problem.worst:
        return average_interval(agent.name, table.outputs, table.gain_exact, agent.party,
                                lower, upper)
    from dpverify.verifiers.multiparty.hints import worst_plan  # lazy: the worst case only

    plan = worst_plan(problem, hints)
    best = None
    for given in ([plan.given] if plan.given is not None else []) + [None]:
        found = _interval_from_hints(plan, given if given is not None else plan.solved(),
                                     lower, upper)
        if found is not None and (best is None or found.width < best.width):
            best = found
        if best is not None and best.width <= problem.tol / 2:
            break
    if best is None:
        raise SolverError("no float hints for the interval certificate")
    return best


def all_inputs_interval_certificate(spec: MultipartySpec, agent: AgentSpec,
                                    accuracy: Accuracy | str, options: VerifyOptions
                                    ) -> IntervalCertificate:
    """interval_certificate of one agent and accuracy, with hints of its own (as
    orbit.orbit_interval_certificate on orbits)."""
    return interval_certificate(AgentProblem(spec, agent, Accuracy(accuracy), options),
                                Hints())


def _interval_from_hints(plan: WorstPlan, given: dict, lower, upper
                         ) -> IntervalCertificate | None:
    """The rationalised hints' bracket in floats; None when a sub-problem has no hint."""
    from dpverify.theory.certificates.interval import prior_bound as interval_prior_bound
    from dpverify.theory.certificates.interval import worst_interval
    from dpverify.theory.certificates.repair import (
        rationalised_prior,
        rationalised_rule,
        uniform_prior,
    )

    if any(given[b] is None for b in plan.bits):
        return None
    n = plan.spec.num_inputs
    table = plan.problem.table
    unit = plan.problem.units.unit
    rules, priors = {}, []
    for b in plan.bits:
        hint = given[b]
        rules[b] = rationalised_rule(plan.orbits, hint.rule)
        relevant = None if b is None else own_bits(plan.spec.parties, plan.party) == b
        candidates = [uniform_prior(n, relevant)]
        fallback = rationalised_prior(plan.orbits, hint, n)
        if fallback is not None:
            candidates.insert(0, fallback)
        priors.extend(candidates)
    bounds = [interval_prior_bound(upper, unit, plan.party, p) for p in priors]
    prior = priors[min(range(len(priors)), key=bounds.__getitem__)]
    decision = rules[None] if plan.party == 0 else (rules[0], rules[1])
    return worst_interval(plan.problem.agent.name, table.outputs, table.gain_exact,
                          plan.party, lower, upper, prior, decision,
                          ("the bracket of the rationalised float rule and prior of RR's "
                           "worst-case LP, in floats with bounded rounding",))


class ProofRoute:
    """RR's exact certificate on all 2^k inputs (method `proof`), checked independently,
    while the inputs can be tabulated: the route `auto` tries first (KOV Theorem 3.1 says
    it closes), after the orbit method beyond policy.ALL_INPUTS_PARTIES (planner.py)."""

    method = Method.PROOF

    def fits(self, problem: AgentProblem) -> str | None:
        k = problem.spec.parties
        if k > MAX_TABULATED_PARTIES:
            return (f"the certificate on all inputs takes at most {MAX_TABULATED_PARTIES} "
                    f"parties (2^{k} inputs)")
        return None

    def use_interval(self, problem: AgentProblem) -> bool:
        """Many parties (policy.INTERVAL_FROM_PARTIES_EPSILON, INTERVAL_FROM_PARTIES), or
        the worst case at an extreme level (hints.beyond_floats: its exact simplex pivots
        on integers of hundreds of digits, policy.EXTREME_ENTRY)."""
        spec = problem.spec
        if spec.lambdas_exact is None:
            if spec.parties >= INTERVAL_FROM_PARTIES_EPSILON or not problem.worst:
                return spec.parties >= INTERVAL_FROM_PARTIES_EPSILON
            from dpverify.verifiers.multiparty.hints import beyond_floats  # lazy: worst only

            return beyond_floats(spec.lambdas)
        return spec.parties >= INTERVAL_FROM_PARTIES

    def interval(self, problem: AgentProblem, hints: Hints) -> IntervalCertificate:
        return interval_certificate(problem, hints)

    def exact(self, problem: AgentProblem, hints: Hints, *, fine: bool = True,
              quick: bool = False) -> Certificate:
        """The exact certificate on all inputs; `quick`, verify's (exact_certificate)."""
        return exact_certificate(problem, hints, fine=fine, quick=quick)

    def run(self, problem: AgentProblem, hints: Hints) -> Outcome:
        """The certificate decides, the independent checker confirms (the worst case's
        float hints get a larger budget, policy.PROOF_HINT_NONZEROS: they run once per
        agent); the verifier's own hints are not used here (hints.lp is for settling)."""
        start = time.perf_counter()
        options = problem.options
        budget = problem.with_options(replace(
            options, max_nonzeros=max(options.nonzero_limit, PROOF_HINT_NONZEROS)))
        own = hints.with_lp(None)
        agent, accuracy, table = problem.agent, problem.accuracy, problem.table

        def result(verdict: Verdict, reason: str, code: ReasonCode, proof: Proof,
                   cert: AnyCertificate | None = None,
                   rule: np.ndarray | None = None) -> Outcome:
            return Outcome(AgentResult(
                agent.name, accuracy.value, None if cert is None else float(cert.bound),
                None if cert is None else float(cert.value), verdict,
                time.perf_counter() - start, reason=reason, rule=rule, outputs=table.outputs,
                method=Method.PROOF, proof=proof, code=code), hints)

        try:
            cert, verdict = decided(self, budget, own)
        except (SizeLimitError, SolverError) as exc:
            return result(Verdict.ERROR, f"undecided: no exact certificate: {exc}",
                          ReasonCode.NO_CERTIFICATE, unproved(str(exc)))
        what = f"the {kind(cert)} certificate"
        if not verdict.checked:
            return result(Verdict.ERROR, f"undecided: {what} {verdict.how}", verdict.code,
                          verdict.proof)
        if verdict.verdict is Verdict.OPTIMAL:
            return result(Verdict.OPTIMAL, f"{what} {verdict.how} (checked independently)",
                          verdict.code, verdict.proof, cert, float_rule(cert))
        return result(Verdict.ERROR, f"undecided: {what} {verdict.how}", verdict.code,
                      verdict.proof, cert)


PROOF = ProofRoute()
