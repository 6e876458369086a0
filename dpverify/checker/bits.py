"""The checker of `dpverify-certificate/1`, on all 2^k inputs of a problem on bits
(docs/theory.md 2.1-2.6, docs/format.md): the orbit format (checker/orbits.py) with every
party a class of its own, whose factor is RR's corner matrix [[p, q], [q, p]] / (p + q) at
lam = p / q, so that core.check_dual checks (C) of theory.md 2.1 for every corner s and
label l in integers (theory.md 2.5):

    sum_x T_s[x] mu[x] >= sum_x T_s[x] prior[x] gain(x, l),   T_s = c_(s_1) (x) ... (x) c_(s_k)

(KOV 2015, proof of Theorem 3.1). Here only the gains of every input, which must be the
spec's.
"""

from __future__ import annotations

from fractions import Fraction

from dpverify.checker import claim, core
from dpverify.checker.fields import Json, get_field, matrix, show
from dpverify.checker.orbits import check_classes
from dpverify.checker.tabulation import spec_gains, spec_values
from dpverify.spec.model import MultipartySpec


def check_bits(spec: MultipartySpec, cert: Json) -> claim.CheckResult:
    head = claim.read_header(spec, cert, claim.FORMAT)
    k = spec.parties
    outputs, gain = input_gains(spec, cert, head)
    levels = claim.read_levels(spec, head, list(range(k)), claim.party_names(k))
    grid = core.class_grid((1,) * k, head.agent.party - 1 if head.agent.party else None)

    def describe(s: int, label: tuple[int, ...], left: Fraction, right: Fraction) -> str:
        name = ", ".join(show(outputs[y]) for y in label)
        return (f"corner inequality fails at corner s = {s:0{k}b}, label ({name}): "
                f"sum_x T_s mu = {show(left)} < sum_x T_s prior gain = {show(right)}")

    return check_classes(spec, head, (1,) * k, grid, gain, levels, describe)


def input_gains(spec: MultipartySpec, cert: Json, head: claim.Header
                ) -> tuple[list[Fraction], core.Gains]:
    """The certificate's outputs and gain table must be the spec's, tabulated here."""
    k, n = spec.parties, 1 << spec.parties
    spec_outputs, rows = spec_gains(spec, head.agent, spec_values(spec, head.agent))
    outputs = claim.read_outputs(cert, spec_outputs)
    gain = matrix(get_field(cert, "gain", list, ""), n, len(outputs), "gain")
    for x, j in ((x, j) for x in range(n) for j in range(len(outputs))):
        if gain[x][j] != rows[x][j]:
            raise claim.CheckFailed(f"gain[{x}][{j}] = {show(gain[x][j])} but the spec gives "
                                    f"{show(rows[x][j])} (input {x:0{k}b}, output "
                                    f"{show(outputs[j])})")
    return outputs, tuple(tuple(row) for row in gain)
