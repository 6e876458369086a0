"""Certificates for multi-party verdicts (docs/theory.md, "Certificates").

Glue between the exact construction (dpverify.theory.certificates) and the float LPs that
give it hints: for the worst case, RR's decision LP (KOV eqs. 4, 6) and its dual, solved on
the orbits of the problem's symmetries when there are any (a symmetric XOR at k = 10 has
11 orbits), else on all inputs. The average case needs no LP. Every certificate is checked
exactly by the construction before it is returned; `dpverify.checker` checks it again,
independently.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.defaults import LpForm, Method
from dpverify.errors import SizeLimitError, SolverError
from dpverify.lp.basis import FloatBasisFinder
from dpverify.lp.builder import chain_nonzeros
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import MAX_TABULATED_PARTIES, tabulate
from dpverify.theory.certificates import (
    MAX_EXACT_ROWS,
    PROVED,
    UNPROVED,
    Orbits,
    WorstHint,
    average_certificate,
    exact_rows,
    own_bits,
    symmetry_orbits,
    trivial_orbits,
    worst_certificate,
)
from dpverify.theory.certificates.format import Certificate
from dpverify.theory.certificates.interval import (
    IntervalCertificate,
    average_interval,
    worst_interval,
)
from dpverify.theory.certificates.interval import prior_bound as interval_prior_bound
from dpverify.theory.certificates.repair import rationalised_prior, rationalised_rule, uniform_prior
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.theory.exact_rows import clean_distribution, has_mass
from dpverify.theory.orbits.certificates import OrbitCertificate
from dpverify.theory.units import units_of
from dpverify.theory.worst_ipm import MAX_DENSE_INPUTS, dense_worst
from dpverify.theory.worst_lp import WorstLp, solve_float
from dpverify.verifiers.multiparty.orbit import (
    ORBIT,
    interval_first,
    orbit_interval_certificate,
)
from dpverify.verifiers.multiparty.routes import (
    ALL_INPUTS_PARTIES,
    CertificateRoute,
    fitting,
    wanted,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.proof import (
    AnyCertificate,
    ExactVerdict,
    first_deciding,
    kind,
    proof_of,
    unproved,
)
from dpverify.verifiers.result import AgentResult, Proof, Verdict

# The reduced (orbit) LP is dense, about |orbits|^2 * |Y| non-zeros, against about
# 3 k 2^k |Y| for the chain-form LP on all inputs: use it while |orbits|^2 <= 16 * 2^k.
REDUCED_FACTOR = 16


def proof_for(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy | str,
              agent_result: AgentResult | None = None,
              options: VerifyOptions | None = None) -> Proof:
    """`verify --certify`: the proof of one result, never raising for a limit or a solver
    failure (those give `unproved` with the reason)."""
    try:
        cert = certificate_for(spec, agent_spec, accuracy, agent_result, options)
    except (SizeLimitError, SolverError) as exc:
        return unproved(str(exc))
    proof = proof_of(cert)
    return replace(proof, reason="; ".join(cert.notes)) if cert.notes else proof


def estimate_worst_nonzeros(spec: MultipartySpec, agent: AgentSpec, orbits: Orbits) -> int:
    """Non-zeros of the float LP a worst-case certificate solves (for the size guard)."""
    n = spec.num_inputs
    m = len(tabulate(spec, agent).outputs)
    reduced = orbits.count * orbits.count * m
    full = m * (chain_nonzeros([2] * spec.parties, [2] * spec.parties) + n + 1) + n
    return reduced if _use_reduced(orbits, n) else full


def _use_reduced(orbits: Orbits, n: int) -> bool:
    return orbits.count < n and orbits.count * orbits.count <= REDUCED_FACTOR * n


# Without symmetry, from this many inputs on (k >= 9) the worst case's hints come from the
# dense interior-point method (theory/worst_ipm.py: 2 s at k = 9, 6 s at k = 11, 40 s at
# k = 12) rather than HiGHS on the chain-form LP (14 s at k = 10, minutes at k = 11).
DENSE_FROM_INPUTS = 512

class ProofRoute:
    """RR's exact certificate on all 2^k inputs (method `proof`), checked independently,
    while the inputs can be tabulated: the route `auto` tries first (KOV Theorem 3.1 says
    it closes), after the orbit method beyond ALL_INPUTS_PARTIES (`certificate_routes`)."""

    method = Method.PROOF

    def fits(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             options: VerifyOptions) -> str | None:
        if spec.parties > MAX_TABULATED_PARTIES:
            return (f"the certificate on all inputs takes at most {MAX_TABULATED_PARTIES} "
                    f"parties (2^{spec.parties} inputs)")
        return None

    def certificate(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                    hint: AgentResult | None, options: VerifyOptions, *, fine: bool = True
                    ) -> Certificate:
        return all_inputs_certificate(spec, agent, accuracy, hint, options, fine=fine)

    def verify(self, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
               options: VerifyOptions) -> AgentResult:
        """The certificate decides, the independent checker confirms (the LP's float hints
        for the worst case get a larger budget: they run once per agent)."""
        start = time.perf_counter()
        table = tabulate(spec, agent)
        budget = replace(options, max_nonzeros=max(options.max_nonzeros, PROOF_HINT_NONZEROS))

        def result(verdict: Verdict, reason: str, proof: Proof,
                   cert: AnyCertificate | None = None,
                   rule: np.ndarray | None = None) -> AgentResult:
            return AgentResult(
                agent.name, accuracy.value, None if cert is None else float(cert.bound),
                None if cert is None else float(cert.value), verdict,
                time.perf_counter() - start, reason=reason, rule=rule, outputs=table.outputs,
                method=Method.PROOF, proof=proof)

        tol = units_of(table.gain_exact).tolerance(options.tol)
        try:
            cert, decided = decided_certificate(self, spec, agent, accuracy, None, budget, tol)
        except (SizeLimitError, SolverError) as exc:
            return result(Verdict.ERROR, f"undecided: no exact certificate: {exc}",
                          unproved(str(exc)))
        what = f"the {kind(cert)} certificate"
        if not decided.checked:
            return result(Verdict.ERROR, f"undecided: {what} {decided.how}", decided.proof)
        if decided.verdict is Verdict.OPTIMAL:
            return result(Verdict.OPTIMAL, f"{what} {decided.how} (checked independently)",
                          decided.proof, cert, float_rule(cert))
        return result(Verdict.ERROR, f"undecided: {what} {decided.how}", decided.proof, cert)


PROOF = ProofRoute()
# The exact certificate on all 2^k inputs solves RR's worst-case LP in floats for hints;
# its LP may be larger than the verifier's own (it runs once per agent).
PROOF_HINT_NONZEROS = 600_000


def certificate_routes(spec: MultipartySpec) -> tuple[CertificateRoute, ...]:
    """The routes that certify, in order of preference: the certificate on all inputs,
    then on orbits; beyond ALL_INPUTS_PARTIES parties the orbit certificate first, for a
    problem its symmetry reduces (the orbit method does not fit one it does not): on a
    2-core machine it takes the same 0.6 s at any k, where the certificate on all 2^k
    inputs of a majority and a party's `sum` under -abs takes 1.2 s at k = 8, 4 s at
    k = 10, 29 s at k = 12. `verify` (methods.py) and `certify` and the exact settling
    (`certificate_for`) all choose in this order, so they take the same method for the
    same agent."""
    return (ORBIT, PROOF) if spec.parties > ALL_INPUTS_PARTIES else (PROOF, ORBIT)


def float_rule(cert: AnyCertificate) -> np.ndarray | None:
    """The certificate's decision rule on all inputs as floats (None for a rule on orbits:
    it has no row per input)."""
    if isinstance(cert, OrbitCertificate):
        return None
    if isinstance(cert, IntervalCertificate):
        return None if cert.classes is not None else cert.rule
    return np.array(cert.decision, dtype=np.float64)


def certificate_for(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy | str,
                    agent_result: AgentResult | None = None,
                    options: VerifyOptions | None = None, *, fine: bool = True) -> Certificate:
    """The exact certificate (typed) of one agent and accuracy of a problem on bits, by
    the route `choose` takes among `certificate_routes` (`--method proof|orbit` asks for
    one; `auto` and `lp` take the first that fits, and the next when its exact certificate
    is over a limit). At the fine brackets of e^eps (64 bits), or (not `fine`) the coarse
    ones the tolerance allows (theory/exact.py). SizeLimitError (a limit) or SolverError
    (a failed LP) when there is none. (Other settings: verifiers/certifiers.py.)"""
    options = options or VerifyOptions()
    accuracy = Accuracy(accuracy)
    routes = fitting(wanted(certificate_routes(spec), options), spec, agent_spec, accuracy,
                     options)
    for i, (route, _) in enumerate(routes):
        stage(spec.name, agent_spec.name, accuracy.value, route.method)  # progress line
        try:
            return route.certificate(spec, agent_spec, accuracy, agent_result, options,
                                     fine=fine)
        except SizeLimitError:
            if i == len(routes) - 1:
                raise
    raise AssertionError("fitting returns at least one route")


def decided_certificate(route: CertificateRoute, spec: MultipartySpec, agent: AgentSpec,
                        accuracy: Accuracy, hint: AgentResult | None,
                        options: VerifyOptions, tol: Fraction
                        ) -> tuple[AnyCertificate, ExactVerdict]:
    """`verify`'s certificate and what it decides, cheapest first (proof.first_deciding):
    where exact rationals are the cost (`use_interval`), the interval certificate
    (outward-rounded floats), then the exact one at the coarse brackets of e^eps the
    tolerance allows; then (always) the exact one at the fine brackets. A small problem
    gets the exact certificate at once. `certify` keeps exact certificates."""
    def exact(fine: bool) -> Callable[[], AnyCertificate]:
        return lambda: route.certificate(spec, agent, accuracy, hint, options, fine=fine)

    attempts: list[tuple[bool, Callable[[], AnyCertificate]]] = []
    large = use_interval(spec, agent, accuracy, route)
    if large:
        attempts.append((True, lambda: interval_certificate(route, spec, agent, accuracy,
                                                            hint, options)))
        if spec.lambdas_exact is None:
            attempts.append((False, exact(False)))
    attempts.append((False, exact(True)))
    return first_deciding(spec, attempts, tol)


def verify_certificate(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy,
                       hint: AgentResult | None, options: VerifyOptions, tol: Fraction
                       ) -> tuple[AnyCertificate, ExactVerdict]:
    """`decided_certificate` by the routes `certificate_for` takes, in its order (the
    exact settling of the LP's verdicts)."""
    routes = fitting(wanted(certificate_routes(spec), options), spec, agent_spec, accuracy,
                     options)
    for i, (route, _) in enumerate(routes):
        try:
            return decided_certificate(route, spec, agent_spec, accuracy, hint, options, tol)
        except SizeLimitError:
            if i == len(routes) - 1:
                raise
    raise AssertionError("fitting returns at least one route")


def all_inputs_certificate(spec: MultipartySpec, agent_spec: AgentSpec,
                           accuracy: Accuracy, agent_result: AgentResult | None,
                           options: VerifyOptions, *, fine: bool = True) -> Certificate:
    """RR's exact certificate on all 2^k inputs (dpverify-certificate/1), at the fine
    brackets of e^eps or (not `fine`) the coarse ones the tolerance allows."""
    table = tabulate(spec, agent_spec)
    if fine:
        lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    else:
        lower, upper = coarse_brackets(spec.lambdas_exact, spec.epsilons_exact, options.tol)
    exact = lower == upper
    party = agent_spec.party
    if accuracy is Accuracy.AVERAGE:
        return average_certificate(agent_spec.name, table.outputs, table.gain_exact, party,
                                   lower, upper, exact)
    plan = _worst_plan(spec, agent_spec, options, agent_result)
    finder = basis_finder(options)
    cert = worst_certificate(agent_spec.name, table.outputs, table.gain_exact, party, lower,
                             upper, exact, plan.orbits, plan.given or plan.solved(), finder)
    if plan.given is not None and cert.status != PROVED and exact and plan.fits:
        # the verifier's hints (relaxed-LP prior) did not close it: RR's own LP and dual
        cert = worst_certificate(agent_spec.name, table.outputs, table.gain_exact, party,
                                 lower, upper, exact, plan.orbits, plan.solved(), finder)
    return cert


@dataclass
class _WorstPlan:
    """What a worst-case certificate on all inputs needs: the orbits of its LP, the hints
    the verifier gave (`given`), and RR's own LP solved on demand (`solved`, once)."""

    spec: MultipartySpec
    agent: str
    table: Any
    party: int
    orbits: Orbits
    bits: list
    estimate: int
    options: VerifyOptions
    given: dict | None
    too_large: SizeLimitError
    _solved: dict | None = None

    @property
    def fits(self) -> bool:
        return self.estimate <= self.options.max_nonzeros

    def solved(self) -> dict:
        if self._solved is None:
            self._solved = self._solve()
        return self._solved

    def _solve(self) -> dict:
        n = self.spec.num_inputs
        unit = units_of(self.table.gain_exact).unit
        if self.orbits.count == n and DENSE_FROM_INPUTS <= n <= MAX_DENSE_INPUTS:
            return _dense_hints(self.spec, unit, self.party, self.bits)
        if not self.fits:
            raise self.too_large
        hints = _solve_hints(self.spec, unit, self.party, self.orbits, self.bits,
                             self.options)
        # None: the hint LP failed on a problem small enough for the exact simplex alone
        return hints if hints is not None else {b: None for b in self.bits}


def _worst_plan(spec: MultipartySpec, agent_spec: AgentSpec, options: VerifyOptions,
                agent_result: AgentResult | None) -> _WorstPlan:
    table = tabulate(spec, agent_spec)
    party = agent_spec.party
    keys = spec.lambdas_exact if spec.lambdas_exact is not None else spec.epsilons_exact
    assert keys is not None  # the loader sets one of them
    n = spec.num_inputs
    orbits = symmetry_orbits(keys, table.gain_exact, party)
    if not _use_reduced(orbits, n):
        orbits = trivial_orbits(spec.parties)
    estimate = estimate_worst_nonzeros(spec, agent_spec, orbits)
    too_large = SizeLimitError(
        f"{spec.source}: the worst-case certificate of {agent_spec.name} needs an LP with "
        f"about {estimate:.3g} non-zeros; the limit is {options.max_nonzeros:,} "
        f"(raise it with --max-nonzeros), and the dense method takes at most "
        f"{MAX_DENSE_INPUTS} inputs without symmetry")
    given = None
    if orbits.count == n and agent_result is not None and agent_result.rule is not None:
        given = _hints_from_result(spec, party, agent_result)
    return _WorstPlan(spec, agent_spec.name, table, party, orbits, [None] if party == 0 else [0, 1],
                      estimate, options, given, too_large)


# Without symmetry `verify` builds the certificate on all inputs in floats (an interval
# bracket, theory/certificates/interval.py) before exact rationals from this many parties
# on when the lambdas come from epsilon (the exact certificate is a bracket too, with
# brackets of e^eps in its integers), and from INTERVAL_FROM_PARTIES with exact lambdas
# (an exact certificate on 2^13 inputs takes seconds; 2^20, minutes). Below, the exact
# certificate takes well under a second and its bracket is the narrower.
INTERVAL_FROM_PARTIES_EPSILON = 8
INTERVAL_FROM_PARTIES = 13


def use_interval(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy,
                 route: CertificateRoute) -> bool:
    """Whether `verify` tries the interval certificate before the exact one: many parties
    (above), or the orbit method beyond its exact work (orbit.use_interval)."""
    if route.method is Method.ORBIT:
        return interval_first(spec, agent_spec, accuracy)
    if spec.lambdas_exact is None:
        return spec.parties >= INTERVAL_FROM_PARTIES_EPSILON
    return spec.parties >= INTERVAL_FROM_PARTIES


def interval_certificate(route: CertificateRoute, spec: MultipartySpec,
                         agent_spec: AgentSpec, accuracy: Accuracy | str,
                         agent_result: AgentResult | None = None,
                         options: VerifyOptions | None = None) -> IntervalCertificate:
    """The certificate's bracket in outward-rounded arithmetic (`verify`; `certify` keeps
    exact certificates): at the fine brackets of e^eps (floats cost nothing more there);
    the average case directly; the worst case from the float hints (RR's worst-case LP:
    its rule, and the better of its prior and the uniform one), rationalised."""
    options = options or VerifyOptions()
    accuracy = Accuracy(accuracy)
    if route.method is Method.ORBIT:
        return orbit_interval_certificate(spec, agent_spec, accuracy, options)
    table = tabulate(spec, agent_spec)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    party = agent_spec.party
    if accuracy is Accuracy.AVERAGE:
        return average_interval(agent_spec.name, table.outputs, table.gain_exact, party,
                                lower, upper)
    plan = _worst_plan(spec, agent_spec, options, agent_result)
    best = None
    for hints in ([plan.given] if plan.given is not None else []) + [None]:
        found = _interval_from_hints(plan, hints if hints is not None else plan.solved(),
                                     lower, upper)
        if found is not None and (best is None or found.width < best.width):
            best = found
        if best is not None and best.width <= units_of(table.gain_exact).tolerance(
                options.tol) / 2:
            break
    if best is None:
        raise SolverError("no float hints for the interval certificate")
    return best


def _interval_from_hints(plan: _WorstPlan, hints: dict, lower, upper
                         ) -> IntervalCertificate | None:
    """The rationalised hints' bracket in floats; None when a sub-problem has no hint."""
    if any(hints[b] is None for b in plan.bits):
        return None
    n = plan.spec.num_inputs
    table = plan.table
    unit = units_of(table.gain_exact).unit
    rules, priors = {}, []
    for b in plan.bits:
        hint = hints[b]
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
    return worst_interval(plan.agent, table.outputs, table.gain_exact, plan.party,
                          lower, upper, prior, decision,
                          ("the bracket of the rationalised float rule and prior of RR's "
                           "worst-case LP, in floats with bounded rounding",))


def _hints_from_result(spec: MultipartySpec, party: int, result: AgentResult) -> dict | None:
    """Hints on all inputs from the verifier: RR's float rule, the relaxed LP's prior."""
    n = spec.num_inputs
    rule = np.asarray(result.rule, dtype=float)
    pi = None if result.pi is None else np.asarray(result.pi, dtype=float)
    if party == 0:
        return {None: WorstHint(rule=rule, prior=_normalised(pi), x_orbits=np.arange(n))}
    out = {}
    bits = own_bits(spec.parties, party)
    for b in (0, 1):
        rel = np.flatnonzero(bits == b)
        prior = None if pi is None else _normalised(pi[rel])
        out[b] = WorstHint(rule=rule[b], prior=prior, x_orbits=rel)
    return out


def _dense_hints(spec: MultipartySpec, gain: np.ndarray, party: int, bits: list) -> dict:
    """Hints on all inputs from the dense interior-point method (theory/worst_ipm.py), for
    a worst case without symmetry on DENSE_FROM_INPUTS to MAX_DENSE_INPUTS inputs."""
    out = {}
    for b in bits:
        relevant = None if b is None else own_bits(spec.parties, party) == b
        lp = WorstLp.over_inputs(spec.lambdas, gain, relevant)
        found = dense_worst(lp)
        out[b] = WorstHint(rule=found.rule, prior=found.prior, x_orbits=lp.rows)
    return out


def _normalised(p: np.ndarray | None) -> np.ndarray | None:
    """A float prior hint made a distribution; None (no hint) when it is not finite or has
    no mass to speak of (theory/exact_rows.py)."""
    if p is None or not np.isfinite(p).all() or not has_mass(p, 1e-9):
        return None
    return clean_distribution(p)


def _solve_hints(spec: MultipartySpec, gain: np.ndarray, party: int, orbits: Orbits,
                 bits: list, options: VerifyOptions) -> dict | None:
    """Float hints per sub-problem; None when an LP failed but the exact simplex can take
    every sub-problem (theory.certificates.MAX_EXACT_ROWS); else the SolverError."""
    out = {}
    k = spec.parties
    try:
        for b in bits:
            relevant = None if b is None else own_bits(k, party) == b
            out[b] = _rr_hint(spec.lambdas, gain, orbits, relevant, options)
    except SolverError:
        if all(exact_rows(orbits, party, b) <= MAX_EXACT_ROWS for b in bits):
            return None
        raise
    return out


def basis_finder(options: VerifyOptions) -> FloatBasisFinder:
    """The HiGHS basis finder (dpverify.lp.basis) of the run's solving context."""
    return options.solver().basis_finder()


def _rr_hint(lambdas, gain: np.ndarray, orbits: Orbits, relevant, options) -> WorstHint:
    """RR's worst-case LP (theory/worst_lp.py) in floats, its rule and dual prior: on orbits
    (dense, rows scaled: a row a reads acc_a(Q) - t >= 0, and scaling it changes nothing;
    entries HiGHS cannot keep are dropped: this LP only gives hints, the certificate is
    exact), else on all inputs in chain form."""
    solve_ = options.solver()
    if orbits.count < gain.shape[0]:
        lp = WorstLp.over_input_orbits(lambdas, orbits, gain, relevant)
        found = solve_float(lp, solve_, form=LpForm.DENSE, scale_rows=True, drop_tiny=True,
                            name="rr-worst-orbits")
        what = "randomized-response worst-case (orbits)"
    else:
        lp = WorstLp.over_inputs(lambdas, gain, relevant)
        found = solve_float(lp, solve_, form=LpForm.CHAIN, name="rr-worst")
        what = "randomized-response worst-case"
    if not found.ok:
        sol = found.solution
        raise SolverError(f"{what} LP for the certificate: {sol.status.value} ({sol.message})")
    return WorstHint(rule=np.clip(found.rule, 0.0, None), prior=_normalised(found.masses),
                     x_orbits=lp.rows)


__all__ = ["PROOF", "UNPROVED", "certificate_for", "certificate_routes", "proof_for"]
