"""The checker of `dpverify-certificate/1`: certificates on all 2^k inputs of a problem on
bits (docs/theory.md 2.1-2.6; docs/format.md, the certificate format).

A certificate for agent A, accuracy acc, proves  value <= OPT <= bound, OPT the best
accuracy of any interactive protocol that is DP at the spec's lambdas (KOV 2015, proof of
Theorem 3.1). It is the orbit certificate (checker/orbits.py) with every party a class of
its own: one axis per party, and on it RR's corner matrix [[p, q], [q, p]] / (p + q) at
lam = p / q, so that (C) of theory.md 2.1,

    sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x] gain(x, l)      (every corner s, label l)

with T_s = c_{s_1} (x) ... (x) c_{s_k}, is checked by checker/core.py in integers
(theory.md 2.5). Here: the gains of every input, which must be the spec's; the rest is
orbits.check_classes.
"""

from __future__ import annotations

from fractions import Fraction

from dpverify.checker.claim import (
    FORMAT,
    CheckFailed,
    CheckResult,
    Header,
    party_names,
    read_header,
    read_levels,
    read_outputs,
)
from dpverify.checker.core import class_grid
from dpverify.checker.fields import Json, get_field, matrix, show
from dpverify.checker.orbits import Gains, check_classes
from dpverify.checker.tabulation import spec_gains, spec_values
from dpverify.spec.model import MultipartySpec


def check_bits(spec: MultipartySpec, cert: Json) -> CheckResult:
    """The steps of docs/format.md, in order; each raises CheckFailed (or
    CertificateFormatError) on the first problem it finds."""
    head = read_header(spec, cert, FORMAT)
    k = spec.parties
    outputs, gain = input_gains(spec, cert, head)
    levels = read_levels(spec, head, list(range(k)), party_names(k))
    grid = class_grid((1,) * k, head.agent.party - 1 if head.agent.party else None)

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        name = ", ".join(show(outputs[y]) for y in label)
        return (f"corner inequality fails at corner s = {s:0{k}b}, label ({name}): "
                f"sum_x T_s mu = {show(left)} < sum_x T_s prior gain = {show(right)}")

    return check_classes(spec, head, (1,) * k, grid, gain, levels, describe)


def input_gains(spec: MultipartySpec, cert: Json, head: Header
                ) -> tuple[list[Fraction], Gains]:
    """The certificate's outputs and gain table must be the spec's, tabulated here."""
    k, n = spec.parties, 1 << spec.parties
    spec_outputs, rows = spec_gains(spec, head.agent, spec_values(spec, head.agent))
    outputs = read_outputs(cert, spec_outputs)
    m = len(outputs)
    gain = matrix(get_field(cert, "gain", list, ""), n, m, "gain")
    for x in range(n):
        for j in range(m):
            if gain[x][j] != rows[x][j]:
                raise CheckFailed(f"gain[{x}][{j}] = {show(gain[x][j])} but the spec gives "
                                  f"{show(rows[x][j])} (input {x:0{k}b}, output "
                                  f"{show(outputs[j])})")
    return outputs, tuple(tuple(row) for row in gain)
