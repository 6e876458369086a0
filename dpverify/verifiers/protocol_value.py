"""An explicit protocol's accuracy for one agent under its optimal decision rule, computed
from the transcript matrix alone, independently of the relaxed LP (docs/theory.md,
"Protocol audits"; KOV 2015, eqs. (2), (4), (5), (6)).

* Average: the argmax rule on every transcript (theory/protocols/transcripts.py), exact for exact
  protocols.
* Worst case: RR's worst-case LP on explicit transcripts (theory/worst_lp.py,
  `over_transcripts`) per block of inputs (the observer's one block; one per own symbol of
  a party; the value is the minimum over blocks). Exact
  protocols of moderate size are solved by the exact simplex (value proved by a rule and
  a prior that meet); otherwise HiGHS solves (W), and the value is bracketed by the
  accuracy of the cleaned rule (below) and the Bayes value of the cleaned dual prior
  (above), exactly when the protocol is exact.

Gains are normalised to [0, 1] by the caller: every value here is in those units.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.policy import PROTOCOL_EXACT_ROWS
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.theory.exact_lp import ExactLpError
from dpverify.theory.exact_rows import (
    clean_distribution,
    clean_stochastic,
    exact_distribution,
    exact_stochastic,
)
from dpverify.theory.protocols.transcripts import (
    Transcripts,
    average_value,
    per_input_accuracy,
    relevant_masks,
)
from dpverify.theory.worst_lp import WorstLp, prior_bound, rule_value, solve_exact, solve_float
from dpverify.verifiers.options import VerifyOptions

EXACT = "exact"  # the value is an exact rational, proved
BRACKET = "bracket"  # exact bounds lower <= value <= upper from an explicit rule and prior
FLOAT = "float"  # floating point

# The exact simplex solves a dense rows x rows system per pivot: used up to this many rows
# (live transcripts + inputs of the block; measured: policy.py)
MAX_EXACT_ROWS = PROTOCOL_EXACT_ROWS


@record(eq=False)
class ProtocolValue:
    """An agent's accuracy on a protocol under its optimal rule (normalised gains):
    `lower <= value <= upper`, `exact` when proved. `rule[a][t][y]`: the rule per own
    symbol (one block for the observer)."""

    lower: float
    upper: float
    rule: np.ndarray
    method: str
    exact: Fraction | None = None
    failure: str = ""
    # exact protocols: the rule as Fractions (rule_exact[a][t][y]) and its exact value
    # (the lower end of a bracket); None for float protocols
    rule_exact: list | None = None
    lower_exact: Fraction | None = None
    upper_exact: Fraction | None = None
    failure_code: ReasonCode = ReasonCode.SOLVER_FAILED  # what `failure` says

    @property
    def value(self) -> float:
        """The accuracy an explicit rule achieves (a lower bound, never flattered)."""
        return self.lower

    @property
    def ok(self) -> bool:
        return not self.failure


def protocol_value(tr: Transcripts, gain: np.ndarray,
                   gain_exact: Sequence[Sequence[Fraction]] | None, party: int,
                   worst: bool, options: VerifyOptions, *, exact_lp: bool = True
                   ) -> ProtocolValue:
    """The agent's accuracy on `tr` under its optimal decision rule (module docstring).
    `exact_lp=False` skips the exact revised simplex of the worst case: an exact protocol
    is then valued by the float LP's rule and prior, exactly (a bracket, or exact when
    they meet), which is what a lower bound needs."""
    exact = tr.exact and gain_exact is not None
    if not worst:
        if exact:
            value, rule = average_value(tr, np.array(gain_exact, dtype=object), party)
            return ProtocolValue(float(value), float(value), rule, EXACT, Fraction(value),
                                 rule_exact=_exact_rows(rule), lower_exact=Fraction(value),
                                 upper_exact=Fraction(value))
        fvalue, rule = average_value(tr, gain, party)
        return ProtocolValue(float(fvalue), float(fvalue), rule, FLOAT)
    blocks = [_worst_block(tr, gain, gain_exact if exact else None, party, mask, options,
                           exact_lp) for mask in relevant_masks(tr.alphabets, party)]
    failure = "; ".join(b.failure for b in blocks if b.failure)
    if failure:
        return ProtocolValue(np.nan, np.nan, np.zeros((0, 0, 0)), FLOAT, failure=failure)
    rule = np.stack([b.rule[0] for b in blocks])
    lowest = min(blocks, key=lambda b: b.lower)
    method = EXACT if all(b.method == EXACT for b in blocks) else lowest.method
    exact_value = None
    if method == EXACT:
        exact_value = min(b.exact for b in blocks if b.exact is not None)
    rule_exact = lower_exact = upper_exact = None
    if all(b.rule_exact is not None for b in blocks):
        rule_exact = [b.rule_exact[0] for b in blocks if b.rule_exact is not None]
        lower_exact = min(b.lower_exact for b in blocks if b.lower_exact is not None)
        upper_exact = min(b.upper_exact for b in blocks if b.upper_exact is not None)
    return ProtocolValue(min(b.lower for b in blocks), min(b.upper for b in blocks), rule,
                         method, exact_value, rule_exact=rule_exact, lower_exact=lower_exact,
                         upper_exact=upper_exact)


def _worst_block(tr: Transcripts, gain: np.ndarray,
                 gain_exact: Sequence[Sequence[Fraction]] | None, party: int, mask: np.ndarray,
                 options: VerifyOptions, exact_lp: bool = True) -> ProtocolValue:
    lp = WorstLp.over_transcripts(tr, mask, gain, gain_exact=gain_exact)
    if exact_lp and gain_exact is not None and lp.exact_rows() <= MAX_EXACT_ROWS:
        # the crash basis: the Bayes rule of the uniform prior on the block
        start = np.argmax(tr.floats()[mask].T @ gain[mask], axis=1)
        try:
            found = solve_exact(lp, start=start,
                                basis_finder=options.solver().basis_finder())
            value = rule_value(lp, found.rule)
            if value != prior_bound(lp, found.masses):  # both proofs meet at an optimum
                raise ExactLpError("the exact rule and prior do not meet")
        except ExactLpError:
            pass  # the float LP and an exact bracket below
        else:
            rule = np.array([[float(v) for v in row] for row in found.rule])
            return ProtocolValue(float(value), float(value), rule[None], EXACT, value,
                                 rule_exact=[found.rule], lower_exact=value, upper_exact=value)
    return _float_block(tr, lp, gain_exact is not None, options)


def _exact_rows(rule: np.ndarray) -> list:
    """A 0/1 (argmax) rule as Fractions."""
    return [[[Fraction(int(v)) for v in row] for row in block] for block in rule.tolist()]


def _float_block(tr: Transcripts, lp: WorstLp, exact: bool,
                 options: VerifyOptions) -> ProtocolValue:
    """(W) for one block solved by HiGHS; bracketed by its cleaned rule and dual prior."""
    solve_ = options.solver().tight(1e-10)

    # Entries HiGHS cannot keep (below 1e-12) are dropped: the LP gives only a rule and a
    # prior, and both are valued again on the whole P below (exactly for exact protocols)
    found = solve_float(lp, solve_, drop_tiny=True, name="protocol-worst", sums_first=True)
    if not found.ok:
        sol = found.solution
        return ProtocolValue(np.nan, np.nan, np.zeros((1, lp.channel.columns, lp.m)), FLOAT,
                             failure=f"the worst-case rule LP did not solve "
                                     f"({sol.status.value}: {sol.message})")
    prior = np.clip(found.masses, 0.0, None)
    if exact:
        exact_rule = exact_stochastic(found.rule)
        lower = rule_value(lp, exact_rule)
        upper = prior_bound(lp, exact_distribution(prior))
        floats = np.array([[float(v) for v in row] for row in exact_rule])
        if lower == upper:
            return ProtocolValue(float(lower), float(lower), floats[None], EXACT, lower,
                                 rule_exact=[exact_rule], lower_exact=lower, upper_exact=lower)
        return ProtocolValue(float(lower), float(upper), floats[None], BRACKET,
                             rule_exact=[exact_rule], lower_exact=lower, upper_exact=upper)
    rule = clean_stochastic(found.rule)
    P, g = lp.channel.floats(), lp.gain
    lower_f = float(per_input_accuracy(P, g, rule[None], (P.shape[0],), 0).min())
    weights = clean_distribution(prior)
    upper_f = float(((weights[:, None] * P).T @ g).max(axis=1).sum())
    return ProtocolValue(lower_f, max(lower_f, upper_f), rule[None], FLOAT)
