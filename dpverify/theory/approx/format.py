"""The certificates of approximate privacy and their JSON forms: the four-ray bound's
(`dpverify-delta-certificate/1`; docs/theory.md, section 7.4), still read by the checker,
and the envelope bound's (`dpverify-envelope-certificate/1`; theory.md 7.10), which
`certify` writes (docs/format.md, "Certificates with delta").

It proves  value <= OPT <= bound  for one agent and accuracy over every interactive
protocol that is (epsilon_i, delta_i)-DP for each party: `upper` is the four-ray LP's dual
made exact (theory/approx/certificate.py: a prior, mu per input, nu per hockey-stick row),
`lower` the product of the parties' RR(epsilon_i, delta_i) (the best non-interactive
protocol, theory.md 7.3) with an explicit decision rule on its 4^k transcripts. The
independent checker is dpverify/checker/delta.py.
"""

from __future__ import annotations

from fractions import Fraction
from typing import ClassVar

from dpverify.records import record
from dpverify.theory.approx.rays import HockeyRow
from dpverify.theory.certificates.format import Certificate
from dpverify.theory.exact import rational_string

FORMAT = "dpverify-delta-certificate/1"
ENVELOPE_FORMAT = "dpverify-envelope-certificate/1"


def row_json(row: HockeyRow, value: Fraction, parties: int) -> dict:
    """A hockey-stick row's identity and its nu: the party (1-based), the direction a -> b
    (`bit` a of rays.HockeyRow) and the other parties' bits x_-i in party order."""
    others = format(row.others, f"0{parties - 1}b") if parties > 1 else ""
    return {"party": row.party, "direction": f"{row.bit}->{1 - row.bit}", "others": others,
            "value": rational_string(value)}


@record(eq=False)
class DeltaCertificate(Certificate):
    """The certificate of the module docstring in the data type of the binary one
    (theory/certificates/format.py), with the deltas and nu (one per hockey-stick row, in
    the order of `rows`); `decision` is Q[t][y] (observer) or Q[b][t][y] (party with own
    bit b) on RR(epsilon, delta)'s transcripts (outputs reveal 0, say 0, say 1, reveal 1
    per party, party 1 most significant)."""

    deltas: tuple[Fraction, ...] = ()
    rows: tuple[HockeyRow, ...] = ()
    nu: tuple[Fraction, ...] = ()

    format_name: ClassVar[str] = FORMAT

    def _layout(self) -> dict:
        return {"deltas": [rational_string(d) for d in self.deltas]}

    def _to_json(self, problem: str) -> dict:
        out = super()._to_json(problem)
        upper = out["upper"]
        k = len(self.deltas)
        out["upper"] = {"lambdas": upper["lambdas"], "prior": upper["prior"],
                        "mu": upper["mu"],
                        "nu": [row_json(r, v, k) for r, v in zip(self.rows, self.nu,
                                                                 strict=True)],
                        "bound": upper["bound"]}
        return out


@record(eq=False)
class EnvelopeCertificate(DeltaCertificate):
    """The envelope bound's certificate: as the four-ray one, with `b` (one value per
    product of rays, mixed radix over each party's rays, party 1 most significant) in
    place of mu: (E1) b(s) + sum_rows nu H_s >= sum_x prior[x] gain(x, l) T_s[x] for every
    s and l, (E2) b concave along every chord, bound = sum of b over the products of
    corners + sum(nu delta) (theory/approx/envelope.py). `mu` is empty."""

    b: tuple[Fraction, ...] = ()

    format_name: ClassVar[str] = ENVELOPE_FORMAT

    def _to_json(self, problem: str) -> dict:
        out = super()._to_json(problem)
        upper = out["upper"]
        out["upper"] = {"lambdas": upper["lambdas"], "prior": upper["prior"],
                        "b": [rational_string(v) for v in self.b], "nu": upper["nu"],
                        "bound": upper["bound"]}
        return out


__all__ = ["ENVELOPE_FORMAT", "FORMAT", "DeltaCertificate", "EnvelopeCertificate",
           "row_json"]
