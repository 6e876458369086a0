"""Certificates for multi-party verdicts (docs/theory.md, "Certificates").

Glue between the exact construction (dpverify.theory.certificates) and the float LPs that
give it hints: for the worst case, RR's decision LP (KOV eqs. 4, 6) and its dual, solved on
the orbits of the problem's symmetries when there are any (a symmetric XOR at k = 10 has
11 orbits), else on all inputs. The average case needs no LP. Every certificate is checked
exactly by the construction before it is returned; `dpverify.checker` checks it again,
independently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.errors import SizeLimitError, SolverError
from dpverify.filenames import file_stem
from dpverify.lp import solve
from dpverify.lp.basis import FloatBasisFinder, float_basis_finder
from dpverify.lp.builder import chain_nonzeros
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
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
from dpverify.theory.certificates.interval import (
    IntervalCertificate,
    average_interval,
    worst_interval,
)
from dpverify.theory.certificates.interval import prior_bound as interval_prior_bound
from dpverify.theory.certificates.repair import rationalised_prior, rationalised_rule, uniform_prior
from dpverify.theory.exact import coarse_brackets, lambda_brackets
from dpverify.theory.exact_rows import clean_distribution, has_mass
from dpverify.theory.units import units_of
from dpverify.theory.worst_ipm import MAX_DENSE_INPUTS, dense_worst
from dpverify.theory.worst_lp import WorstLp, solve_float
from dpverify.verifiers.multiparty.orbit import orbit_certificate, orbit_interval_certificate
from dpverify.verifiers.multisymbol.verifier import symbol_certificate
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.proof import proof_summary
from dpverify.verifiers.result import AgentResult

# The reduced (orbit) LP is dense, about |orbits|^2 * |Y| non-zeros, against about
# 3 k 2^k |Y| for the chain-form LP on all inputs: use it while |orbits|^2 <= 16 * 2^k.
REDUCED_FACTOR = 16


def certificate_filename(problem: str, agent: str, accuracy: str) -> str:
    """`<problem>.<agent>.<accuracy>.cert.json`, agent `observer` or `party-i`; the problem's
    name made a plain file name (`dpverify.filenames.file_stem`)."""
    return f"{file_stem(problem)}.{agent.replace(':', '-')}.{accuracy}.cert.json"


def dump_certificate(cert: dict) -> str:
    """The certificate as JSON text: one key per line, one matrix row per line."""

    def scalar_list(v) -> bool:
        return isinstance(v, list) and not any(isinstance(x, (list, dict)) for x in v)

    def render(v, indent: str) -> str:
        inner = indent + "  "
        if isinstance(v, dict):
            items = [f"{inner}{json.dumps(key)}: {render(val, inner)}" for key, val in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + indent + "}"
        if isinstance(v, list) and not scalar_list(v):
            return "[\n" + ",\n".join(inner + render(x, inner) for x in v) + "\n" + indent + "]"
        return json.dumps(v, separators=(", ", ": "))

    return render(cert, "") + "\n"


def proof_for(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy | str,
              agent_result: AgentResult | None = None,
              options: VerifyOptions | None = None) -> dict[str, Any]:
    """`verify --certify`: the proof summary of one result, never raising for a limit or a
    solver failure (those give `unproved` with the reason)."""
    try:
        cert = certify_agent(spec, agent_spec, accuracy, agent_result, options)
    except (SizeLimitError, SolverError) as exc:
        return {"status": UNPROVED, "width": None, "reason": str(exc)}
    summary = proof_summary(cert)
    if cert.get("notes"):
        summary["reason"] = "; ".join(cert["notes"])
    return summary


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

# The certificate on all 2^k inputs is used up to this many parties (k = 16: ~0.5 s for the
# average case); beyond, or with --method orbit, a symmetric problem gets an orbit
# certificate (dpverify-orbit-certificate/1).
ALL_INPUTS_PARTIES = 16


def use_orbit_certificate(spec: MultipartySpec, agent: AgentSpec,
                          options: VerifyOptions) -> bool:
    from dpverify.spec.symmetric import agent_symmetry

    if options.method == "proof" or (options.method != "orbit"
                                     and spec.parties <= ALL_INPUTS_PARTIES):
        return False
    symmetry = agent_symmetry(spec, agent)
    return symmetry is not None and symmetry.orbit_count < 2 ** min(spec.parties, 62)


def brackets(spec: MultipartySpec, options: VerifyOptions, fine: bool
             ) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """The lambdas of a certificate: exact, or brackets of e^eps, coarse as the tolerance
    allows (theory/exact.py, coarse_brackets: they cost at most a quarter of --tol) or the
    fine ones (64 bits)."""
    if fine:
        return lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    return coarse_brackets(spec.lambdas_exact, spec.epsilons_exact, options.tol)


def certify_agent(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy | str,
                  agent_result: AgentResult | None = None,
                  options: VerifyOptions | None = None, *, fine: bool = False) -> dict:
    """The certificate JSON object (docs/format.md) for one agent and accuracy.

    Checked exactly before it is returned; when the exact construction could not close the
    gap the status is `bracket` (a valid, weaker certificate) or `unproved` (with `notes`).
    `agent_result` (from verify_agent) supplies float hints for the worst case when the
    problem has no symmetry to reduce by; otherwise RR's decision LP is solved here. The
    brackets of e^eps are the coarse ones the tolerance allows, or the fine ones (`fine`).
    """
    options = options or VerifyOptions()
    accuracy = Accuracy(accuracy)
    if not spec.binary:  # more than two symbols: dpverify-mary-certificate/1
        return symbol_certificate(spec, agent_spec, accuracy, options)
    if use_orbit_certificate(spec, agent_spec, options):
        return orbit_certificate(spec, agent_spec, accuracy, options,
                                 fine=fine).to_json(spec.name)
    table = tabulate(spec, agent_spec)
    lower, upper = brackets(spec, options, fine)
    exact = lower == upper
    party = agent_spec.party
    if accuracy is Accuracy.AVERAGE:
        cert = average_certificate(agent_spec.name, table.outputs, table.gain_exact, party,
                                   lower, upper, exact)
        return cert.to_json(spec.name)
    plan = _worst_plan(spec, agent_spec, options, agent_result)
    finder = basis_finder(options)
    cert = worst_certificate(agent_spec.name, table.outputs, table.gain_exact, party, lower,
                             upper, exact, plan.orbits, plan.given or plan.solved(), finder)
    if plan.given is not None and cert.status != PROVED and exact and plan.fits:
        # the verifier's hints (relaxed-LP prior) did not close it: RR's own LP and dual
        cert = worst_certificate(agent_spec.name, table.outputs, table.gain_exact, party,
                                 lower, upper, exact, plan.orbits, plan.solved(), finder)
    return cert.to_json(spec.name)


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


# Without symmetry the certificate on all inputs is built in floats (an interval bracket,
# theory/certificates/interval.py) before exact rationals whenever the lambdas come from
# epsilon (the exact certificate is a bracket too), and with exact lambdas from this many
# parties on (an exact certificate on 2^13 inputs takes seconds; 2^20, minutes).
INTERVAL_FROM_PARTIES = 13


def use_interval(spec: MultipartySpec, agent_spec: AgentSpec, options: VerifyOptions) -> bool:
    """Whether `verify` tries the interval certificate before the exact one."""
    if not spec.binary:
        return False
    return spec.lambdas_exact is None or spec.parties >= INTERVAL_FROM_PARTIES or \
        use_orbit_certificate(spec, agent_spec, options)


def interval_certificate(spec: MultipartySpec, agent_spec: AgentSpec,
                         accuracy: Accuracy | str, agent_result: AgentResult | None = None,
                         options: VerifyOptions | None = None) -> IntervalCertificate:
    """The certificate's bracket in outward-rounded arithmetic (`verify`; `certify` keeps
    exact certificates): at the fine brackets of e^eps (floats cost nothing more there);
    the average case directly; the worst case from the float hints (RR's worst-case LP:
    its rule, and the better of its prior and the uniform one), rationalised."""
    options = options or VerifyOptions()
    accuracy = Accuracy(accuracy)
    if use_orbit_certificate(spec, agent_spec, options):
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
    """The HiGHS basis finder (dpverify.lp.basis) within the options' time and threads."""
    return float_basis_finder(time_limit=options.time_limit, threads=options.threads)


def _rr_hint(lambdas, gain: np.ndarray, orbits: Orbits, relevant, options) -> WorstHint:
    """RR's worst-case LP (theory/worst_lp.py) in floats, its rule and dual prior: on orbits
    (dense, rows scaled: a row a reads acc_a(Q) - t >= 0, and scaling it changes nothing;
    entries HiGHS cannot keep are dropped: this LP only gives hints, the certificate is
    exact), else on all inputs in chain form."""

    def solve_(lp):  # the module's `solve`, looked up at each call
        return solve(lp, options.backend, time_limit=options.time_limit,
                     threads=options.threads)

    if orbits.count < gain.shape[0]:
        lp = WorstLp.over_input_orbits(lambdas, orbits, gain, relevant)
        found = solve_float(lp, solve_, form="dense", scale_rows=True, drop_tiny=True,
                            name="rr-worst-orbits")
        what = "randomized-response worst-case (orbits)"
    else:
        lp = WorstLp.over_inputs(lambdas, gain, relevant)
        found = solve_float(lp, solve_, form="chain", name="rr-worst")
        what = "randomized-response worst-case"
    if not found.ok:
        sol = found.solution
        raise SolverError(f"{what} LP for the certificate: {sol.status.value} ({sol.message})")
    return WorstHint(rule=np.clip(found.rule, 0.0, None), prior=_normalised(found.masses),
                     x_orbits=lp.rows)


__all__ = ["UNPROVED", "certificate_filename", "certify_agent", "dump_certificate",
           "proof_for", "proof_summary"]
