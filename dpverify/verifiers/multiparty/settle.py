"""Settling a multi-party verdict exactly when the float LPs cannot (docs/theory.md,
"Certificates"; KOV 2015, Theorem 3.1).

The float path compares two computations (the relaxed LP and randomized response) within a
tolerance. When they disagree, when one of them failed, or when the privacy levels are
beyond what a float LP keeps, the verdict is settled here, never guessed:

* `optimal` when the exact certificate (theory.certificates) proves it: its bounds meet
  (`proved-optimal`), or they bracket the optimum within the tolerance (lambdas from
  epsilon). The certificate is then checked again by the independent checker
  (dpverify.checker), so two independent computations agree.
* `gap` only with an exact witness: a protocol made exactly feasible from the relaxed LP's
  solution, whose exact accuracy exceeds the exact upper bound on randomized response.
  The corners of the relaxed LP *are* randomized response with a randomised rule, so such
  a witness contradicts the certificate (and the theorem): it is reported loudly.
* `error` ("undecided") otherwise, with what is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError, SolverError
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.theory.certificates import own_bits
from dpverify.theory.certificates.format import Certificate
from dpverify.theory.exact import Scaled, lambda_brackets, rr_apply
from dpverify.theory.exact_rows import exact_stochastic
from dpverify.theory.rr import kron_apply
from dpverify.verifiers.multiparty.all_inputs import float_rule
from dpverify.verifiers.multiparty.hints import Hints
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.multiparty.routes import decided as decided_by
from dpverify.verifiers.multiparty.routes import first_fitting, fitting
from dpverify.verifiers.progress import stage
from dpverify.verifiers.proof import kind, proof_of, unproved
from dpverify.verifiers.result import Proof, Verdict


@record
class Settled:
    """An exactly settled result: values in the user's units, and the proof."""

    verdict: Verdict
    reason: str
    relaxed: float | None
    rr: float | None
    proof: Proof | None = None
    rule: np.ndarray | None = None  # the certificate's decision rule (RR's), as floats
    code: ReasonCode = ReasonCode.NO_CERTIFICATE  # what the reason says


def settle(problem: AgentProblem, hints: Hints, why: str,
           witness: tuple[np.ndarray, bool] | None = None) -> Settled:
    """Settle one (agent, accuracy) exactly, by the certificate makers the planner gave
    (`hints.makers`, in its order: the first that fits, the next when its certificate is
    over a limit), with the LP route's float result as hints (`hints.lp`) and the float
    LPs other routes already solved (`hints.memo`). `why` says why the floats could not
    decide (the tolerance is relative to the range of the agent's gains); `witness` is
    (the relaxed LP's corner weights theta[s, label] as floats, worst) when there is a
    relaxed solution to turn into an exact witness."""
    spec, agent, table = problem.spec, problem.agent, problem.table
    try:
        cert, decided = first_fitting(fitting(hints.makers, problem),
                                      lambda maker: decided_by(maker, problem, hints))
    except (SizeLimitError, SolverError) as exc:
        return Settled(Verdict.ERROR, f"undecided: {why}; no exact certificate: {exc}",
                       None, None, unproved(str(exc)), code=ReasonCode.NO_CERTIFICATE)
    value, bound = cert.value, cert.bound
    what = f"the {kind(cert)} certificate"
    if not decided.checked:  # the construction and the checker disagree: a bug, never a pass
        return Settled(Verdict.ERROR, f"undecided: {why}; {what} {decided.how}", None, None,
                       decided.proof, code=decided.code)
    if decided.verdict is Verdict.OPTIMAL:
        return Settled(Verdict.OPTIMAL, f"{why}; {what} {decided.how} (checked "
                       "independently)", float(bound), float(value), decided.proof,
                       float_rule(cert), decided.code)
    if witness is not None:
        lower = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)[0]
        theta, worst = witness
        reached = witness_value(lower, table.gain_exact, agent.party, theta, worst)
        if reached > bound:
            return Settled(Verdict.GAP, (
                f"a protocol made exactly feasible from the relaxed LP's solution reaches "
                f"{float(reached):.12g}, above the exact upper bound {float(bound):.12g} on "
                "randomized response: this contradicts Kairouz-Oh-Viswanath Theorem 3.1 and "
                "the certificate; please report it"), float(reached), float(value),
                decided.proof, code=ReasonCode.WITNESS_ABOVE_BOUND)
    return Settled(Verdict.ERROR, f"undecided: {why}; {what} {decided.how}",
                   float(bound), float(value), decided.proof, code=decided.code)


def certificate_of(problem: AgentProblem, hints: Hints, *, fine: bool = True) -> Certificate:
    """The exact certificate of one agent and accuracy by the certificate makers the
    planner gave (`hints.makers`: the first that fits, the next when its certificate is
    over a limit), at the fine brackets of e^eps or (not `fine`) the coarse ones the
    tolerance allows: what `certify` writes. SizeLimitError (a limit) or SolverError (a
    failed LP) when there is none."""
    spec, agent, accuracy = problem.spec, problem.agent, problem.accuracy
    return first_fitting(fitting(hints.makers, problem),
                         lambda maker: maker.exact(problem, hints, fine=fine),
                         lambda maker: stage(spec.name, agent.name, accuracy.value,
                                             maker.method))  # the progress line


def proof_for(problem: AgentProblem, hints: Hints) -> Proof:
    """`verify --certify`: the proof of one result (`certificate_of`, with the result as
    hints), never raising for a limit or a solver failure (those give `unproved` with the
    reason)."""
    try:
        cert = certificate_of(problem, hints)
    except (SizeLimitError, SolverError) as exc:
        return unproved(str(exc))
    proof = proof_of(cert)
    return replace(proof, reason="; ".join(cert.notes)) if cert.notes else proof


def label_gain_table(gain_exact: Sequence[Sequence[Fraction]], party: int) -> list[list]:
    """gain(x, label) exactly: labels are outputs for the observer, pairs (y0, y1) (index
    y0 * m + y1) for party i, with gain(x, (y0, y1)) = w(f(x), y_{x_i}) (theory.md)."""
    if party == 0:
        return [list(row) for row in gain_exact]
    n, m = len(gain_exact), len(gain_exact[0])
    bits = own_bits(n.bit_length() - 1, party)
    return [[gain_exact[x][b if bits[x] else a] for a in range(m) for b in range(m)]
            for x in range(n)]


def exact_corner_weights(theta: np.ndarray) -> list[list[Fraction]]:
    """theta[s, label] made an exact protocol: clipped at 0 and each corner's row normalised
    (exactly) to sum 1. Since the corners are the columns of P_RR, whose rows sum to 1, the
    labels of every input then sum to 1: an exactly feasible point of the relaxed LP
    (theory/exact_rows.py)."""
    return exact_stochastic(theta)


def witness_value(lambdas: Sequence[Fraction], gain_exact, party: int, theta: np.ndarray,
                  worst: bool) -> Fraction:
    """The exact accuracy of the exact protocol made from theta (exact_corner_weights), with
    the corners at `lambdas` (the lower bracket for epsilon, so that it is DP)."""
    weights = Scaled.from_fractions(exact_corner_weights(theta))
    P = rr_apply(lambdas, weights)  # P_label[x] = sum_s T_s[x] theta[s, label]
    G = Scaled.from_fractions(label_gain_table(gain_exact, party))
    per_input = (G.num * P.num).sum(axis=1)
    den = G.den * P.den
    if worst:
        return Fraction(int(min(per_input.tolist())), den)
    return Fraction(int(sum(per_input.tolist())), den * len(per_input))


def corner_weights(lambdas: Sequence[float], columns: np.ndarray) -> np.ndarray:
    """theta = S^-1 P: the corner weights of label columns P (2^k x L) made of any rank-one DP
    points. Every rank-one DP tensor is a non-negative combination of corners (KOV's corner
    lemma), so in exact arithmetic theta >= 0; in floats it is clipped by
    exact_corner_weights. Used to turn an interior-point solution into a witness."""
    inverse = []
    for lam in lambdas:
        if lam == 1.0:  # S_i singular: the factor carries no information
            inverse.append(np.eye(2))
        else:
            inverse.append(np.array([[lam, -1.0], [-1.0, lam]]) * (1.0 + lam) / (lam * lam - 1))
    return kron_apply(inverse, columns)
