"""Certificates for inputs with more than two symbols (`dpverify-mary-certificate/1`;
docs/theory.md, section 6.5): the exact bound of an outcome (outcome.py) as (prior, mu),
and the best protocol found (a witness, or m-ary RR) with its exact decision rule as the
lower bound. Every certificate is checked by the construction and then by the independent
checker (dpverify/checker/symbols.py) before it is reported; `dpverify certify` runs the
verifier for it (verifier.py, `symbol_certificate`).
"""

from __future__ import annotations

from fractions import Fraction

from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.certificates.format import UNPROVED
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.symbols.certificate import (
    SymbolCertificate,
    certificate_status,
    protocol_accuracies,
    upper_holds,
)
from dpverify.theory.units import Units
from dpverify.verifiers.multisymbol.outcome import Outcome
from dpverify.verifiers.proof import proof_of as certificate_proof
from dpverify.verifiers.proof import unproved
from dpverify.verifiers.result import Proof


def build_certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                      out: Outcome, units: Units) -> SymbolCertificate | None:
    """The certificate of an outcome, in the user's units (w = lo + span w': mu = span mu'
    + lo prior, bound = span bound' + lo); None when the outcome has no bound."""
    if out.bound is None or out.best_channels is None or out.best_rule is None:
        return None
    table = tabulate(spec, agent)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    prior = out.bound.prior
    mu = units.dual_to_user(out.bound.mu, prior)
    bound = units.to_user(out.bound.bound)
    decision = out.best_rule[0] if agent.party == 0 else out.best_rule
    gain = [list(row) for row in table.gain_exact]
    accuracies = protocol_accuracies(out.best_channels, decision, gain, spec.alphabets,
                                     agent.party)
    worst = accuracy is Accuracy.WORST
    value = min(accuracies) if worst else sum(accuracies, Fraction(0)) / len(accuracies)
    notes = []
    if not upper_holds(upper, spec.alphabets, agent.party, gain, prior, mu):
        notes.append("self-check failed: the ray inequalities do not hold")
    exact = spec.lambdas_exact is not None or all(e == 0 for e in spec.epsilons_exact or ())
    status = UNPROVED if notes else certificate_status(value, bound, exact, lower, upper)
    return SymbolCertificate(
        agent=agent.name, accuracy=accuracy.value, alphabets=tuple(spec.alphabets),
        outputs=tuple(table.outputs), gain=tuple(tuple(r) for r in table.gain_exact),
        upper_lambdas=tuple(upper), prior=tuple(prior), mu=tuple(mu), bound=bound,
        lower_lambdas=tuple(lower), channels=tuple(tuple(map(tuple, C))
                                                   for C in out.best_channels),
        decision=tuple(decision), value=value, status=str(status), notes=tuple(notes))


def proof_of(out: Outcome) -> Proof:
    """`verify --certify`: the certificate's status and bracket (it was checked
    independently when the outcome was decided)."""
    if out.certificate is None:
        return unproved(out.reason)
    return certificate_proof(out.certificate, out.checked)
