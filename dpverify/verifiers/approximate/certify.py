"""`dpverify certify` and `verify --certify` with delta > 0: the envelope bound as a
certificate file (`dpverify-envelope-certificate/1`, theory/approx/format.py; docs/format.md,
"Certificates with delta"; docs/theory.md, section 7.10).

Upper side: the envelope LP solved in floats (envelope.py), its duals made exact at the
upper rational brackets of e^epsilon (theory/approx/envelope.py), mapped to the user's
units (w = lo + span w': b(s) = span b'(s) + lo sum_x prior[x] T_s[x], which keeps every
chord, as a multilinear function of s; nu = span nu'; bound = span bound' + lo, the
corner products' columns summing to the all-ones vector). Lower side: the product of the
parties' RR(epsilon_i, delta_i) at the lower brackets with its optimal rule, exactly
(noninteractive.py). Every certificate is checked exactly by the construction
(check_envelope) and again by the independent checker before a verdict rests on it
(verifiers/proof.py, exact_verdict).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from dpverify.errors import SizeLimitError, SolverError
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.certificate import exact_label_gains, hockey_keys, weighted_products
from dpverify.theory.approx.envelope import check_envelope
from dpverify.theory.approx.format import EnvelopeCertificate
from dpverify.theory.certificates.format import BRACKET, PROVED, UNPROVED
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import units_of
from dpverify.verifiers.approximate.envelope import (
    FloatEnvelope,
    envelope_nonzeros,
    exact_envelope,
    float_envelope,
)
from dpverify.verifiers.approximate.noninteractive import rr_value
from dpverify.verifiers.options import VerifyOptions, check_limit
from dpverify.verifiers.proof import exact_verdict, unproved
from dpverify.verifiers.result import Proof


def delta_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                      options: VerifyOptions, floats: FloatEnvelope | None = None
                      ) -> EnvelopeCertificate:
    """The certificate of one agent and accuracy of a problem on bits with delta > 0
    (`floats`: the envelope LP already solved by `verify`, else it is solved here).
    SizeLimitError (exit 3) beyond --max-nonzeros, as `verify` refuses it; SolverError
    when the LP gives no duals or RR's value is not exact."""
    accuracy = Accuracy(accuracy)
    deltas = tuple(Fraction(d) for d in spec.deltas)
    table = tabulate(spec, agent)
    worst = accuracy is Accuracy.WORST
    party = agent.party
    labels = len(table.outputs) ** (1 if party == 0 else 2)
    check_limit(spec.source, envelope_nonzeros(spec.parties, deltas, labels, worst), options,
                f"parties = {spec.parties} and {labels} labels (four rays per party, "
                "delta > 0)")
    units = units_of(table.gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    what = f"{spec.source}: {agent.name} {accuracy.value}"
    if floats is None:
        floats = float_envelope(spec.lambdas, deltas, units.unit, party, worst, options)
    dual = exact_envelope(floats, upper, deltas, units.exact, party)
    if dual is None:
        raise SolverError(f"{what}: no certificate: {floats.failure or 'no duals'}")
    rr = rr_value(lower, deltas, units, party, worst, options)
    if rr.rule_exact is None or rr.lower_exact is None:
        raise SolverError(f"{what}: no certificate: RR(epsilon, delta)'s value is not "
                          f"exact ({rr.failure or 'no exact rule'})")
    notes = []
    if not check_envelope(dual, exact_label_gains(units.exact, party)):
        notes.append("self-check failed: the envelope's dual inequalities do not hold")
    spread = weighted_products(dual.lambdas, deltas, dual.prior)  # sum_x prior T_s
    b = [units.span * v + units.lo * w for v, w in zip(dual.b, spread, strict=True)]
    nu = [units.span * v for v in dual.nu]
    bound = units.to_user(dual.bound)
    value = units.to_user(rr.lower_exact)
    exact = spec.lambdas_exact is not None or all(e == 0 for e in spec.epsilons_exact or ())
    if notes or value > bound:
        status = UNPROVED
    elif exact and tuple(lower) == tuple(upper) and value == bound:
        status = PROVED
    else:
        status = BRACKET
    decision = rr.rule_exact[0] if party == 0 else rr.rule_exact
    return EnvelopeCertificate(
        agent=agent.name, accuracy=accuracy.value, outputs=tuple(table.outputs),
        gain=tuple(tuple(r) for r in table.gain_exact), upper_lambdas=tuple(upper),
        prior=tuple(dual.prior), mu=(), bound=bound, lower_lambdas=tuple(lower),
        decision=tuple(decision), value=value, status=str(status), notes=tuple(notes),
        deltas=deltas, rows=tuple(hockey_keys(upper, deltas)), nu=tuple(nu), b=tuple(b))


def delta_proof(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                options: VerifyOptions, floats: FloatEnvelope | None = None
                ) -> tuple[Proof, str]:
    """`verify --certify` with delta > 0: the certificate built and checked by the
    independent checker, as the result's `proof`; and, when the checker rejects it (a bug:
    the bound rests on the same dual), why, for the verdict `error`. A limit or a solver
    failure gives `unproved` with the reason, and no failure."""
    try:
        cert = delta_certificate(spec, agent, accuracy, options, floats)
    except (SizeLimitError, SolverError) as exc:
        return unproved(str(exc)), ""
    decided = exact_verdict(spec, cert, units_of(tabulate(spec, agent).gain_exact)
                            .tolerance(options.tol))
    proof = decided.proof
    if cert.notes:
        proof = replace(proof, reason="; ".join(cert.notes))
    if not decided.checked:
        return proof, f"the certificate of the bound {decided.how}: a bug, please report it"
    return proof, ""


__all__ = ["delta_certificate", "delta_proof"]
