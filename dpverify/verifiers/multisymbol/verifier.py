"""The verifier for inputs with more than two symbols (docs/theory.md, section 6): research
mode, where m-ary randomized response is not known to be optimal.

For each agent and accuracy, in the gains normalised to [0, 1] (the tolerance is relative
to their range, so no verdict depends on their scale), three exact numbers:

* U, a proved upper bound over every interactive DP protocol: the ray-product LP, made
  exact from its duals at the upper rational brackets of the levels (symbol_bound.py);
* R, what m-ary RR reaches with its optimal decision rule, exactly: at the lower brackets
  (a DP protocol, R_lo) and at the upper ones (R_hi >= RR's value at the true levels, since
  RR at a higher level can be degraded into RR at a lower one);
* B, the best protocol found (symbol_search.py), written as a protocol file and valued
  again exactly from that file (symbol_witness.py); B = R_lo when nothing beats RR.

Verdicts (`optimal`, `gap`, `open`, or `error`, never guessed):

    U - R_lo <= tol             optimal: m-ary RR reaches the bound
    B - R_hi >  tol             gap: the witness beats m-ary RR, which is not optimal here
    U - B    >  tol             open: the optimum lies in [B, U], and nothing decides it
    otherwise                   error: undecided within the tolerance
"""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

from dpverify.defaults import DEFAULT_WITNESS_DIR, Method
from dpverify.reasons import ReasonCode
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.numbers import rational_text
from dpverify.spec.tables import tabulate
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.symbols.certificate import SymbolCertificate
from dpverify.theory.symbols.noninteractive import (
    exact_channel,
    exact_transcripts,
    rr_exact_channels,
)
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.multisymbol.bound import (
    check_bound_size,
    exact_bound,
    float_bound,
    label_gains,
)
from dpverify.verifiers.multisymbol.certify import build_certificate, proof_of
from dpverify.verifiers.multisymbol.outcome import Outcome
from dpverify.verifiers.multisymbol.search import Objective, search
from dpverify.verifiers.multisymbol.witness import witness_text, witness_value, write_witness
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.result import ProblemResult, SymbolResult, Verdict


def _rr(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy, units: Units,
        levels, options: VerifyOptions):
    """m-ary RR at exact `levels` with its optimal rule: its ProtocolValue and channels."""
    channels = rr_exact_channels(spec.alphabets, levels)
    tr = exact_transcripts(spec.alphabets, channels)
    value = protocol_value(tr, units.unit, units.exact, agent.party,
                           accuracy is Accuracy.WORST, options)
    return value, channels


def _witness(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy, units: Units,
             lower, found, out: Outcome, options: VerifyOptions,
             directory: Path | None) -> None:
    """The found protocol as an exact witness, valued from its file; kept when it beats
    RR's exact value at the lower levels."""
    channels = [exact_channel(C, lam) for C, lam in zip(found.channels, lower, strict=True)]
    note = f"from the {found.origin} start"
    path = None
    if directory is not None:
        path = write_witness(directory, spec, agent, accuracy, channels, note)
        valued = witness_value(path, spec, agent, accuracy, lower, units, options)
    else:
        valued = witness_value("<witness>", spec, agent, accuracy, lower, units, options,
                               text=witness_text(spec, agent, accuracy, channels, note))
    if valued.value is None:
        out.notes.append(f"the best protocol found was refused as a witness: {valued.reason}")
    elif out.rr_low is not None and valued.value > out.rr_low:
        out.best, out.best_channels, out.best_rule = valued.value, channels, valued.rule
        out.origin, out.witness = found.origin, path
        return
    if path is not None:
        path.unlink(missing_ok=True)  # no better than RR: no witness


def decide(out: Outcome, tol: float, units: Units | None = None) -> None:
    """The verdict of the module docstring, from the exact numbers (normalised); the
    reasons show them in the user's units when `units` are given."""
    assert out.bound is not None and out.rr_low is not None and out.rr_high is not None
    assert out.best is not None
    bound, rr, best = out.bound.bound, out.rr_low, out.best

    def shown(v: Fraction) -> str:
        return f"{units.user(v) if units else float(v):.12g}"

    interval = f"[{shown(best)}, {shown(bound)}]"
    if rr > bound:
        out.verdict, out.code, out.reason = Verdict.ERROR, ReasonCode.BUG, (
            f"m-ary RR's exact value {shown(rr)} exceeds the exact upper bound {shown(bound)}: "
            "a bug, please report it")
    elif bound - rr <= tol:
        out.verdict = Verdict.OPTIMAL
    elif best - out.rr_high > tol:
        out.verdict, out.code, out.reason = Verdict.GAP, ReasonCode.GAP, (
            f"a protocol found by the search ({out.origin} start) reaches {shown(best)}, above "
            f"m-ary randomized response ({shown(rr)}) by {float(best - out.rr_high):.3g} of the "
            f"gains' range: m-ary RR is not optimal here; "
            + (f"the optimum lies in {interval}" if bound - best > tol else
               "it reaches the upper bound within --tol" if bound != best else
               f"it reaches the exact upper bound: the optimum is {_exact(best, units)}"))
    elif bound - best > tol:
        out.verdict, out.code, out.reason = Verdict.OPEN, ReasonCode.OPEN, (
            f"open: the optimum lies in {interval} (the best protocol found, the upper "
            f"bound; width {float(bound - best):.3g} of the gains' range), and m-ary RR reaches "
            f"{shown(rr)}: whether it is optimal is not decided")
    else:
        out.verdict, out.code, out.reason = Verdict.ERROR, ReasonCode.BRACKET_TOO_WIDE, (
            f"undecided: m-ary RR is within --tol of the best protocol found, which is "
            f"within --tol of the bound, but RR is {float(bound - rr):.3g} below the bound")


def _exact(v: Fraction, units: Units | None) -> str:
    """An exact value in the user's units: "p/q" when short, else its float."""
    user = units.to_user(v) if units else v
    return text if len(text := rational_text(user)) <= 24 else f"{float(user):.12g}"


def symbol_outcome(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                   options: VerifyOptions, directory: Path | None = None) -> Outcome:
    """Bound, RR, search and witness for one agent and accuracy (module docstring)."""
    table = tabulate(spec, agent)
    check_bound_size(spec, agent, len(table.outputs), options)
    units = units_of(table.gain_exact)
    worst = accuracy is Accuracy.WORST
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    out = Outcome()
    floats = float_bound(spec, label_gains(spec, agent, units.unit), worst, options)
    out.bound = exact_bound(spec, agent, floats, units.exact, upper)
    if out.bound is None:
        out.reason = floats.failure or "the ray-product LP's duals give no bound"
        out.code = ReasonCode.SOLVER_FAILED
        return out
    low, channels = _rr(spec, agent, accuracy, units, lower, options)
    high = low if lower == upper else _rr(spec, agent, accuracy, units, upper, options)[0]
    if low.lower_exact is None or high.upper_exact is None or low.rule_exact is None:
        out.reason = f"m-ary RR's value could not be computed exactly ({low.failure})"
        out.code = ReasonCode.NOT_EXACT
        return out
    out.rr_low, out.rr_high = low.lower_exact, high.upper_exact
    out.best, out.best_channels, out.best_rule = out.rr_low, channels, low.rule_exact
    if out.bound.bound - out.rr_low > options.tol:
        objective = Objective(spec.alphabets, tuple(float(v) for v in lower), units.unit,
                              agent.party, worst)
        found = search(objective, floats.theta, options.restarts, options.seed, options,
                       stop_at=float(out.bound.bound) - options.tol / 4, prior=floats.pi)
        if found.value > float(out.rr_low) + 1e-12:
            _witness(spec, agent, accuracy, units, lower, found, out, options, directory)
    decide(out, options.tol, units)
    _certified(spec, agent, accuracy, out, units)
    return out


def _certified(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy, out: Outcome,
               units: Units) -> None:
    """Both ends of the verdict as an exact certificate (the bound, and the best protocol
    with its rule), checked by the independent checker (dpverify/mary_checker.py): a
    verdict stands only when it passes. A failure is a bug, and the verdict `error`."""
    from dpverify.checker import check_certificate

    cert = build_certificate(spec, agent, accuracy, out, units)
    if cert is None:
        return
    checked = check_certificate(spec, cert.to_json(spec.name))
    value, bound = cert.value, cert.bound
    best = units.to_user(out.best or 0)
    upper = units.to_user(out.bound.bound if out.bound else 0)
    if not checked.ok or value != best or bound != upper:
        out.verdict, out.code = Verdict.ERROR, ReasonCode.CHECK_FAILED
        out.reason = ("the exact certificate of this result fails the independent check "
                      f"({checked.message if not checked.ok else 'its values differ'}): a "
                      "bug, please report it; " + out.reason)
    out.certificate, out.checked = cert, checked.ok


def witness_directory(options: VerifyOptions) -> Path:
    return Path(options.witness_dir) if options.witness_dir else DEFAULT_WITNESS_DIR


def verify_symbol_agent(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                        options: VerifyOptions) -> SymbolResult:
    start = time.perf_counter()
    out = symbol_outcome(spec, agent, accuracy, options, witness_directory(options))
    units = units_of(tabulate(spec, agent).gain_exact)
    reason = "; ".join(r for r in [out.reason, *out.notes] if r)
    code = out.code if out.code is not None or not reason else ReasonCode.NOTE
    return SymbolResult(
        agent.name, accuracy.value, units.user(out.bound.bound if out.bound else None),
        units.user(out.rr_low), out.verdict, time.perf_counter() - start, reason=reason,
        code=code,
        outputs=tabulate(spec, agent).outputs,
        best_value=None if out.best is None else units.user(out.best),
        witness=None if out.witness is None else str(out.witness),
        proof=proof_of(out) if options.certify and out.bound is not None else None)


def symbol_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                       options: VerifyOptions) -> SymbolCertificate:
    """`dpverify certify` for more than two symbols: the certificate (no witness file is
    written; the certificate holds the protocol)."""
    accuracy = Accuracy(accuracy)
    out = symbol_outcome(spec, agent, accuracy, options, None)
    if out.certificate is None:
        from dpverify.errors import SolverError

        raise SolverError(f"{spec.source}: {agent.name} {accuracy.value}: no certificate: "
                          f"{out.reason}")
    return out.certificate


def check_symbol_size(spec: MultipartySpec, options: VerifyOptions) -> None:
    """Refuse a problem (SizeLimitError) before any work when one agent's LP is too large."""
    for agent in spec.agents:
        check_bound_size(spec, agent, len(tabulate(spec, agent).outputs), options)


def verify_multisymbol(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    """Every agent and accuracy of a problem with some alphabet > 2."""
    header = {"parties": spec.parties, "lambdas": list(spec.lambdas),
              "alphabets": list(spec.alphabets)}
    check_symbol_size(spec, options)
    results = []
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            stage(spec.name, agent.name, accuracy.value, Method.RAYS)
            results.append(verify_symbol_agent(spec, agent, accuracy, options))
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), header,
                         setting=spec.setting)


__all__ = ["Outcome", "decide", "symbol_certificate", "symbol_outcome", "units_of",
           "verify_multisymbol"]


def symbol_bound(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 options: VerifyOptions) -> tuple[float | None, float | None, str]:
    """(the exact ray-product bound, m-ary RR's value, why the bound is None), in the
    user's units, without the search: what an audit compares a protocol with."""
    table = tabulate(spec, agent)
    check_bound_size(spec, agent, len(table.outputs), options)
    units = units_of(table.gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    floats = float_bound(spec, label_gains(spec, agent, units.unit),
                         accuracy is Accuracy.WORST, options)
    bound = exact_bound(spec, agent, floats, units.exact, upper)
    rr = _rr(spec, agent, accuracy, units, lower, options)[0]
    if bound is None:
        return None, None, floats.failure or "the ray-product LP's duals give no bound"
    return units.user(bound.bound), units.user(rr.lower_exact), ""
