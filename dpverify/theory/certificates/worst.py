"""Worst-case certificates: the exact minimax prior and worst-case rule of randomized response.

With pi an optimal minimax prior of RR's worst-case decision LP (KOV 2015, eqs. 4 and 6;
its LP dual), the bound sum(v) of bounds.py equals RR's worst-case value (LP duality). The
rule and the prior are found, per sub-problem (the observer, or one own bit of a party):

1. from float hints, by complementary slackness (repair.py): cheap when it works;
2. by the exact revised simplex (theory/worst_lp.py, the LP written once), started from the
   optimal basis of a float solve of the same standard-form LP (`basis_finder`), when the
   LP is small;
3. failing both, from the rationalised hints: a valid, weaker certificate (a bracket).

lambda = e^eps: the rule is found at rationals lambda_lo <= e^eps (RR is then DP) and the
prior at lambda_hi >= e^eps (the bound then holds), theory.md "Certificates".
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpverify.policy import QUICK_PIVOT_WORK, QUICK_REPAIR_WORK
from dpverify.spec.symmetric import Orbits, lift_rule, orbit_members
from dpverify.theory.certificates.bounds import (
    finish,
    rule_value,
    upper_from_prior,
)
from dpverify.theory.certificates.format import Certificate
from dpverify.theory.certificates.repair import (
    WorstHint,
    exact_worst_prior,
    exact_worst_rule,
    for_accuracy,
    rationalised_prior,
    rationalised_rule,
    relevant_mask,
    repair_unknowns,
    rule_repair_work,
    uniform_prior,
)
from dpverify.theory.exact import Scaled, product_words
from dpverify.theory.units import units_of
from dpverify.theory.worst_lp import BasisFinder, WorstLp, solve_exact

# The exact revised simplex keeps B^-1 (rows^2 rationals, updated at every pivot): used
# while the standard-form LP has at most this many rows.
MAX_EXACT_ROWS = 200
# Complementary slackness solves exact systems (fmpq rref, cubic in the unknowns: the
# hint's fractional rule entries and its prior's support). Beyond this many unknowns (a
# worst case on 2^12 inputs without symmetry has thousands) the rationalised hints are
# used as they are: a bracket as narrow as the float solve that found them.
MAX_REPAIR_UNKNOWNS = 400
# A bracket is accepted from the fast path when its relative width is below this.
BRACKET_TOLERANCE = Fraction(1, 10**12)

def exact_worst_lp(lambdas: Sequence[Fraction], gain: Scaled, party: int, bit: int | None,
                   orbits: Orbits, basis_finder: BasisFinder | None = None,
                   basis: Sequence[int] | None = None, pivot_work: int | None = None
                   ) -> tuple[list, list[Fraction], Fraction, tuple[int, ...]]:
    """RR's worst-case LP on orbits (theory/worst_lp.py, over_input_orbits), solved exactly:
    (rule over all tau, minimax prior per input, value, the optimal basis). The prior of an
    input is its orbit's mass shared equally by the orbit's members. With `pivot_work`, a
    PivotLimit (theory/exact_lp.py) past its budget (worst_lp.pivot_budget)."""
    n = gain.num.shape[0]
    lp = WorstLp.over_input_orbits(lambdas, orbits, relevant=relevant_mask(n.bit_length() - 1,
                                                                         party, bit),
                                   gain_exact=gain)
    found = solve_exact(lp, basis=basis, basis_finder=basis_finder, pivot_work=pivot_work)
    prior = [Fraction(0)] * n
    members = orbit_members(orbits)
    assert lp.sizes is not None
    for mass, a, size in zip(found.masses, lp.rows.tolist(), lp.sizes.tolist(), strict=True):
        for x in members[a]:
            prior[x] = mass / size
    return lift_rule(orbits, found.rule), prior, found.value, found.basis


def exact_rows(orbits: Orbits, party: int, bit: int | None) -> int:
    """Rows of the exact standard form of one sub-problem (theory/worst_lp.py)."""
    k = int(orbits.ids.size).bit_length() - 1
    return WorstLp.over_input_orbits([Fraction(1)] * k, orbits,
                                     relevant=relevant_mask(k, party, bit)).exact_rows()


def _close(value: Fraction, bound: Fraction, exact: bool) -> bool:
    if exact:
        return value == bound
    return bound - value <= BRACKET_TOLERANCE * (1 + abs(value))


def _best_prior(upper, gain: Scaled, party: int, bit, orbits: Orbits, hint: WorstHint,
                value: Fraction | None, exact_lambdas: bool):
    """Candidate priors, cheapest first, until one meets the rule's value: the uniform prior
    on the sub-problem (XOR-like problems), the hint's support with near-ties, then with
    exact ties only. Returns ((bound, prior, mu) with the smallest bound, reason)."""
    n = gain.num.shape[0]
    relevant = relevant_mask(n.bit_length() - 1, party, bit)
    found = None
    why = ""
    for attempt in ("uniform", "near-ties", "ties"):
        prior: list[Fraction] | None
        if attempt == "uniform":
            prior = uniform_prior(n, relevant)
        else:
            prior, why = exact_worst_prior(upper, gain, party, bit, orbits, hint,
                                           near_ties=attempt == "near-ties")
        if prior is not None:
            mu, bound = upper_from_prior(upper, gain, party, prior)
            if found is None or bound < found[0]:
                found = (bound, prior, mu)
            if value is not None and _close(value, bound, exact_lambdas):
                break
    return found, why


def _exact_subproblem(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits,
                      basis_finder: BasisFinder | None, pivot_work: int | None = None):
    """The exact simplex: the rule at the lower lambdas, the prior at the upper ones (the
    optimal basis at the lower lambdas is the start at the upper ones: they differ by about
    1e-19 relative, so it is almost always optimal there too); `pivot_work`, each solve's
    budget (a PivotLimit past it)."""
    rule, prior, _, basis = exact_worst_lp(lower, gain, party, bit, orbits, basis_finder,
                                           None, pivot_work)
    if tuple(upper) != tuple(lower):
        prior = exact_worst_lp(upper, gain, party, bit, orbits, basis_finder, basis,
                               pivot_work)[1]
    mu, bound = upper_from_prior(upper, gain, party, prior)
    return rule, (bound, prior, mu)


def _fast_path(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits, hint: WorstHint,
               exact_lambdas: bool):
    """Complementary slackness on the hints: (rule or None, why, value, found, why_prior)."""
    k = gain.num.shape[0].bit_length() - 1
    rule, why_rule = exact_worst_rule(lower, gain, party, bit, orbits, hint)
    value = None
    if rule is not None:
        value = rule_value(lower, gain, party, for_accuracy(rule, party), True,
                           relevant_mask(k, party, bit))
    found, why_prior = _best_prior(upper, gain, party, bit, orbits, hint, value, exact_lambdas)
    return rule, why_rule, value, found, why_prior


def quick_pivot_work(lambdas: Sequence[Fraction]) -> int:
    """verify's work for the exact simplex on all inputs with exact lambdas (from epsilon a
    checked bracket stands without it): policy.QUICK_PIVOT_WORK in operations on 64-bit
    words. A pivot's integers are products of the parties' lambdas, about
    sum_i bits(lambda_i) bits, so each of its rows^3 operations costs that many words
    (measured: 20 ms a pivot at 114 rows of lambdas 4/3 and 5/2; 0.5 s at 130 rows of
    brackets of e^eps, 64 bits each)."""
    return QUICK_PIVOT_WORK // product_words(lambdas)


def _worst_subproblem(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits,
                      hint: WorstHint | None, exact_lambdas: bool,
                      basis_finder: BasisFinder | None = None,
                      quick_width: Fraction | None = None):
    """One sub-problem (observer, or a party's own bit): (rule, (bound, prior, mu), notes).
    `quick_width` (verify; certify proves) is the checked bracket (normalised gains) that
    may stand: with lambdas from epsilon, the rationalised hints' bracket within it stands
    where the rule's repair would pass policy.QUICK_REPAIR_WORK (with exact lambdas the
    repair is cheap, and it proves); where complementary slackness leaves a bracket
    within it, that bracket stands (lambdas from epsilon: the exact simplex would give a
    bracket too), or (exact lambdas) the exact simplex of a small sub-problem gets
    policy.QUICK_PIVOT_WORK and past it the bracket stands."""
    n = gain.num.shape[0]
    k = n.bit_length() - 1
    where = _where(bit)
    small = exact_rows(orbits, party, bit) <= MAX_EXACT_ROWS
    if hint is None:  # no float hint (the hint LP failed): the exact simplex directly
        rule, found = _exact_subproblem(lower, upper, gain, party, bit, orbits, basis_finder)
        return rule, found, []
    unknowns = repair_unknowns(hint)
    if not small and unknowns > MAX_REPAIR_UNKNOWNS:
        return _rationalised(upper, gain, party, bit, orbits, hint, [
            f"exact repair{where}: {unknowns} unknowns, more than {MAX_REPAIR_UNKNOWNS}; "
            "the float rule and prior are rationalised and bound exactly"])
    if quick_width is not None and not exact_lambdas and \
            rule_repair_work(orbits, hint, lower) > QUICK_REPAIR_WORK:
        standing = _standing_rationalised(lower, upper, gain, party, bit, orbits, hint,
                                          quick_width)
        if standing is not None:
            return standing
    rule, why_rule, value, found, why_prior = _fast_path(lower, upper, gain, party, bit,
                                                         orbits, hint, exact_lambdas)
    if value is not None and _close(value, found[0], exact_lambdas):
        return rule, found, []
    if small and quick_width is None:
        rule, found = _exact_subproblem(lower, upper, gain, party, bit, orbits, basis_finder)
        return rule, found, []
    notes = []
    if rule is None:
        notes.append(f"exact rule{where}: {why_rule}; the rationalised float rule is used")
        rule = rationalised_rule(orbits, hint.rule)
        if small:
            value = rule_value(lower, gain, party, for_accuracy(rule, party), True,
                               relevant_mask(k, party, bit))
    fallback = rationalised_prior(orbits, hint, n)
    if fallback is not None:
        mu, bound = upper_from_prior(upper, gain, party, fallback)
        if bound < found[0]:
            found = (bound, fallback, mu)
    notes.append(f"exact prior{where}: {why_prior or 'not tight'}; the best of the uniform "
                 "and the rationalised float prior is used")
    if small:  # verify: the exact simplex, within a budget where the bracket would stand
        assert value is not None
        return _quick_exact(lower, upper, gain, party, bit, orbits, basis_finder,
                            exact_lambdas, (rule, found, notes),
                            found[0] - value <= quick_width)
    return rule, found, notes


def _where(bit: int | None) -> str:
    """A note's name for a sub-problem: nothing for the observer, the own bit for a party."""
    return "" if bit is None else f" (own bit {bit})"


def _standing_rationalised(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits,
                           hint: WorstHint, quick_width: Fraction):
    """verify, where the rule's repair would pass policy.QUICK_REPAIR_WORK: the
    rationalised hints' checked bracket when it is within `quick_width`, else None."""
    where = _where(bit)
    rule, found, notes = _rationalised(upper, gain, party, bit, orbits, hint, [
        f"exact repair{where}: more than {QUICK_REPAIR_WORK:,} word operations; the "
        "rationalised float rule and prior bracket the optimum within --tol (certify "
        "proves it)"])
    k = gain.num.shape[0].bit_length() - 1
    value = rule_value(lower, gain, party, for_accuracy(rule, party), True,
                       relevant_mask(k, party, bit))
    return (rule, found, notes) if found[0] - value <= quick_width else None


def _quick_exact(lower, upper, gain: Scaled, party: int, bit, orbits: Orbits,
                 basis_finder: BasisFinder | None, exact_lambdas: bool, bracket, within: bool):
    """verify on a small sub-problem whose repair left `bracket` (rule, found, notes):
    within --tol it stands with lambdas from epsilon (the exact simplex would give a
    bracket too); with exact lambdas the exact simplex gets policy.QUICK_PIVOT_WORK where
    it is within, and past that budget the bracket stands."""
    from dpverify.theory.exact_lp import PivotLimit  # lazy: exact solves only

    where = _where(bit)
    rule, found, notes = bracket
    if within and not exact_lambdas:
        return rule, found, [*notes, f"the checked bracket{where}, within --tol, stands "
                             "(certify proves the optimum)"]
    try:
        exact_rule, exact_found = _exact_subproblem(
            lower, upper, gain, party, bit, orbits, basis_finder,
            quick_pivot_work(lower) if within else None)
    except PivotLimit as exc:
        return rule, found, [*notes, f"the exact simplex{where} found {exc}: the checked "
                             "bracket, within --tol, stands (certify proves the optimum)"]
    return exact_rule, exact_found, []


def _rationalised(upper, gain: Scaled, party: int, bit, orbits: Orbits, hint: WorstHint,
                  notes: list[str]):
    """The hints as exact rationals, without repair: the rationalised rule, and the better
    of the rationalised and the uniform prior (each exactly a bound)."""
    n = gain.num.shape[0]
    candidates = [uniform_prior(n, relevant_mask(n.bit_length() - 1, party, bit))]
    fallback = rationalised_prior(orbits, hint, n)
    if fallback is not None:
        candidates.insert(0, fallback)
    found = None
    for prior in candidates:
        mu, bound = upper_from_prior(upper, gain, party, prior)
        if found is None or bound < found[0]:
            found = (bound, prior, mu)
    assert found is not None
    return rationalised_rule(orbits, hint.rule), found, notes


def worst_certificate(agent: str, outputs, gain_exact, party: int,
                      lower: Sequence[Fraction], upper: Sequence[Fraction],
                      exact_lambdas: bool, orbits: Orbits, hints: dict,
                      basis_finder: BasisFinder | None = None,
                      quick_width: Fraction | None = None) -> Certificate:
    """The worst-case certificate (`hints[None]` for the observer, `hints[0]`, `hints[1]` for
    a party's own bits: float LP solutions, or None to solve exactly without a hint);
    `quick_width`, verify's bracket that may stand (`_worst_subproblem`; None: prove).

    The construction runs on the gains normalised to [0, 1] (an affine map w -> lo + span w'
    changes every accuracy the same way, so the optimal rules and priors are the same) and
    the bounds are mapped back exactly: mu = span mu' + lo prior, bound = span bound' + lo,
    value = span value' + lo. A party's worst case is the minimum over its own bits (KOV
    eq. 4), and a prior on one own bit's inputs is a prior on all inputs: the smallest
    bound is kept.
    """
    units = units_of(gain_exact)
    gain = Scaled.from_fractions(units.exact)
    bits = [None] if party == 0 else [0, 1]
    notes: list[str] = []
    rules = {}
    found = []
    for b in bits:
        rule, candidate, more = _worst_subproblem(lower, upper, gain, party, b, orbits,
                                                  hints[b], exact_lambdas, basis_finder,
                                                  quick_width)
        rules[b] = rule
        notes.extend(more)
        found.append(candidate)
    bound, prior, mu = min(found, key=lambda c: c[0])  # the smallest valid bound
    decision = tuple(tuple(r) for r in rules[None]) if party == 0 else \
        tuple(tuple(tuple(r) for r in rules[b]) for b in (0, 1))
    value = rule_value(lower, gain, party, decision, worst=True)
    original = Scaled.from_fractions(gain_exact)
    return finish(agent, "worst", outputs, gain_exact, original, party, lower, upper, prior,
                  units.dual_to_user(mu, prior), units.to_user(bound), decision,
                  units.to_user(value), exact_lambdas, uniform=False, notes=tuple(notes))

