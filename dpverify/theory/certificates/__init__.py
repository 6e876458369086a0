"""Exact certificates of optimality (theory.md, "Certificates"; KOV 2015, Theorem 3.1).

* `format`: the certificate data type and its JSON form;
* `bounds`: the exact upper bound (prior, mu) and lower bound (RR with a rule), and the
  average-case certificate;
* `symmetry`: orbits of inputs under the problem's symmetries;
* `repair`: exact worst-case rules and priors from float hints (complementary slackness);
* `worst`: the worst-case certificate (repair, else the exact simplex, else a bracket).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpverify.lazy import lazy_names
from dpverify.spec.symmetric import (
    Orbits,
    symmetry_orbits,
    trivial_orbits,
)
from dpverify.theory.certificates.bounds import (
    average_certificate,
    average_rule,
    check_lower,
    check_upper,
    input_accuracies,
    label_maxima,
    own_bits,
    rule_value,
    upper_from_prior,
)
from dpverify.theory.certificates.format import BRACKET, FORMAT, PROVED, UNPROVED, Certificate

if TYPE_CHECKING:
    from dpverify.theory.certificates.repair import (
        WorstHint,
        exact_worst_prior,
        exact_worst_rule,
        rationalised_prior,
        rationalised_rule,
        uniform_prior,
    )
    from dpverify.theory.certificates.worst import (
        MAX_EXACT_ROWS,
        exact_rows,
        exact_worst_lp,
        worst_certificate,
    )

# The worst case's names, imported when first used (as in dpverify/spec/__init__.py): the
# repair and the worst-case certificate import the worst-case LP (theory/worst_lp.py) and
# lp/, which an average case does not need (issue 25, point 5: start-up).
HOMES = {name: "repair" for name in ("WorstHint", "exact_worst_prior", "exact_worst_rule",
                                     "rationalised_prior", "rationalised_rule",
                                     "uniform_prior")}
HOMES.update({name: "worst" for name in ("MAX_EXACT_ROWS", "exact_rows", "exact_worst_lp",
                                         "worst_certificate")})

__all__ = [
    "BRACKET", "FORMAT", "MAX_EXACT_ROWS", "PROVED", "UNPROVED", "Certificate",
    "Orbits", "WorstHint", "average_certificate", "average_rule", "check_lower", "check_upper",
    "exact_rows", "exact_worst_lp", "exact_worst_prior", "exact_worst_rule", "input_accuracies",
    "label_maxima", "own_bits", "rationalised_prior", "rationalised_rule",
    "rule_value", "symmetry_orbits", "trivial_orbits",
    "uniform_prior", "upper_from_prior", "worst_certificate",
]


__getattr__ = lazy_names(__name__, HOMES)
