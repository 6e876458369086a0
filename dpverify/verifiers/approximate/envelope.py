"""The envelope bound over every interactive (epsilon_i, delta_i)-DP protocol on bits: the
flow LP of theory/approx/envelope.py assembled with lp.builder, solved through lp.solve,
and its duals made an exact bound at the upper rational brackets of the levels
(docs/theory.md, section 7.10).

The LP, with theta[s, l] >= 0 per state (product of rays) and label, sigma[c] >= 0 per
chord:

    sum_l theta[s, l] + sum_{c from s} sigma[c] - sum_{c into s} w sigma[c] = [s in {c0,c1}^k]
                                                                         (duals b(s))
    sum_{s,l} H_row,s theta[s, l] <= delta_i(row)        every hockey row   (duals nu)
    average: maximise (1/n) sum_{s,l} (sum_x gain(x, l) T_s[x]) theta[s, l]
    worst:   maximise t  s.t.  sum_{s,l} gain(x, l) T_s[x] theta[s, l] - t >= 0  (duals pi)

Every row is sparse except the worst case's (one per input, over the states whose column
is positive there): 4^k states, k 4^k chords. The float optimum is a hint; what is reported
is the exact bound, valid whatever the solver did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.errors import SizeLimitError
from dpverify.lp.builder import LpBuilder
from dpverify.records import record
from dpverify.spec.model import MultipartySpec
from dpverify.theory.approx.certificate import exact_label_gains
from dpverify.theory.approx.envelope import (
    Chords,
    EnvelopeBound,
    chords,
    envelope_bound,
    root_states,
)
from dpverify.theory.approx.rays import RayLpData, ray_counts, ray_factor, ray_lp_data
from dpverify.verifiers.options import VerifyOptions

SNAP_DENOMINATOR = 10**6  # duals also tried as the nearest small rationals (exact optima)
TIGHT_FEASIBILITY = 1e-10


@record(eq=False)
class FloatEnvelope:
    """The float LP's optimum and duals (normalised gains), its flow, or why it failed."""

    value: float | None
    b: np.ndarray | None = None
    nu: np.ndarray | None = None
    pi: np.ndarray | None = None
    theta: np.ndarray | None = None  # (states, labels)
    sigma: np.ndarray | None = None  # (chords,)
    data: RayLpData | None = None
    chords: Chords | None = None
    failure: str = ""


CHAIN_PARTIES = 4  # from this many parties the worst case's input rows are chains


def symbols_refusal(spec: MultipartySpec) -> SizeLimitError:
    """The refusal (exit 3, undecided) of delta > 0 with some alphabet > 2: what the
    dispatch tables raise for that setting (verifiers/dispatch.py)."""
    return SizeLimitError(
        f"{spec.source}: approximate privacy (delta > 0) is verified for parties holding "
        f"bits only, and this problem has alphabets {list(spec.alphabets)}: "
        "RR(epsilon, delta), the envelope bound and the protocol search are built "
        "for two symbols (docs/theory.md, \"Approximate privacy\"); give delta = 0 "
        "(pure epsilon-DP, the ray-product method of more than two symbols) or "
        "alphabet = 2")


def _chain_nonzeros(counts: Sequence[int]) -> int:
    """The non-zeros of LpBuilder.chain over the parties' ray factors (2 x c, with
    c + 2 entries > 0 when c = 4, 4 when c = 2): per pass, the factor's entries times
    the dimensions around it, and one per output."""
    total, done = 0, 1
    for j, c in enumerate(counts):
        rest = math.prod(counts[j + 1:])
        total += done * (c + 2 if c == 4 else 4) * rest + done * 2 * rest
        done *= 2
    return total


def envelope_nonzeros(k: int, deltas: Sequence[Fraction | float], labels: int,
                      worst: bool) -> int:
    """The LP's non-zeros (float_envelope), before anything is built (for
    --max-nonzeros)."""
    counts = ray_counts(deltas)
    S = math.prod(counts)
    n = 1 << k
    positive = [3 if c == 4 else 2 for c in counts]  # rays > 0 at a given bit
    chords = 3 * sum(S for c in counts if c == 4)
    hockey = sum(2 * (n // 2) * math.prod(p for j, p in enumerate(positive) if j != i)
                 for i, c in enumerate(counts) if c == 4)
    total = S + S * (labels + 1) + chords + hockey
    if worst:
        total += labels * (_chain_nonzeros(counts) if k >= CHAIN_PARTIES
                           else n * math.prod(positive)) + n * (labels + 1)
    return total


def float_envelope(lambdas: Sequence[float], deltas: Sequence[Fraction], gain: np.ndarray,
                   party: int, worst: bool, options: VerifyOptions) -> FloatEnvelope:
    """Build and solve the LP of the module docstring at float levels. Each state's
    stopped mass has its own column (the flow and hockey rows use it; it is the sum of
    the state's labels); from CHAIN_PARTIES parties the worst case's input rows take each
    label's column T theta_l in chain form (lp.builder: k passes instead of T's 3^k 2^k
    entries)."""
    data = ray_lp_data(lambdas, deltas, gain, party)
    ch = chords([float(v) for v in lambdas], data.counts)
    T, H, G = data.points, data.hockey, data.label_gains
    n, S = T.shape
    L = G.shape[1]
    k = len(data.counts)
    init = np.zeros(S)
    init[root_states(data.counts)] = 1.0
    b = LpBuilder()
    flow = b.add_rows(S, init, init)
    hockey_rows = b.add_rows(H.shape[0], -np.inf, data.row_deltas)
    worst_rows = b.add_rows(n, 0.0, np.inf) if worst else None
    stopped = b.add_cols(S)
    b.add(flow, stopped, 1.0)
    if H.shape[0]:
        b.add_matrix(hockey_rows, stopped, H)
    labels_rows = b.add_rows(S, 0.0, 0.0)  # sum_l theta[s, l] = stopped[s]
    b.add(labels_rows, stopped, -1.0)
    factors = [ray_factor(lam, c) for lam, c in zip(lambdas, data.counts, strict=True)]
    blocks = []
    for lab in range(L):
        g = G[:, lab]
        if worst_rows is not None and k >= CHAIN_PARTIES:
            theta, z = b.chain(factors)
            b.add(worst_rows, z, g)
        else:
            theta = b.add_cols(S, cost=0.0 if worst else (T.T @ g) / n)
            if worst_rows is not None:
                b.add_matrix(worst_rows, theta, T * g[:, None])
        b.add(labels_rows, theta, 1.0)
        blocks.append(theta)
    sigma = b.add_cols(len(ch))
    if len(ch):
        b.add(flow[ch.source], sigma, 1.0)
        b.add(flow[ch.target1], sigma, -ch.weight1.astype(np.float64))
        b.add(flow[ch.target2], sigma, -ch.weight2.astype(np.float64))
    if worst_rows is not None:
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(worst_rows, t, -1.0)
    lp = b.build(maximize=True, name=f"envelope-{'worst' if worst else 'average'}",
                 drop_tiny=True)
    sol = options.solver().tight(TIGHT_FEASIBILITY)(lp)
    if not sol.optimal:
        return FloatEnvelope(None, data=data, chords=ch, failure=(
            f"the envelope LP did not solve ({sol.status.value}: {sol.message})"))
    return FloatEnvelope(
        sol.objective, b=sol.row_duals[flow], nu=sol.row_duals[hockey_rows],
        pi=-sol.row_duals[worst_rows] if worst_rows is not None else None,
        theta=np.stack([sol.x[blk] for blk in blocks], axis=1), sigma=sol.x[sigma],
        data=data, chords=ch)


def _priors(n: int, pi: np.ndarray | None) -> list[list[Fraction]]:
    """The uniform prior (average); the dual prior clipped and normalised exactly, as the
    floats' exact values and as small rationals (worst case)."""
    if pi is None:
        return [[Fraction(1, n)] * n]
    out = []
    clipped = np.clip(pi, 0.0, None)
    for exact in ([Fraction(float(v)) for v in clipped],
                  [Fraction(float(v)).limit_denominator(SNAP_DENOMINATOR) for v in clipped]):
        total = sum(exact, Fraction(0))
        if total > 0:
            out.append([v / total for v in exact])
    return out


def exact_envelope(floats: FloatEnvelope, lambdas_hi: Sequence[Fraction],
                   deltas: Sequence[Fraction], gain_exact: Sequence[Sequence[Fraction]],
                   party: int) -> EnvelopeBound | None:
    """The float duals made a proved bound at `lambdas_hi` (the upper brackets), trying
    the floats' exact values and the nearest small rationals; the smaller bound is kept."""
    if floats.b is None or floats.nu is None:
        return None
    labels = exact_label_gains(gain_exact, party)
    n = len(labels)
    best: EnvelopeBound | None = None
    for snap in (False, True):
        def exact(v: float, snap: bool = snap) -> Fraction:
            f = Fraction(float(v))
            return f.limit_denominator(SNAP_DENOMINATOR) if snap else f

        b = [exact(v) for v in floats.b]
        nu = [max(exact(v), Fraction(0)) for v in floats.nu]
        for prior in _priors(n, floats.pi):
            cert = envelope_bound(lambdas_hi, deltas, labels, prior, b, nu)
            if best is None or cert.bound < best.bound:
                best = cert
    return best


def proved_envelope(lambdas: Sequence[float], lambdas_hi: Sequence[Fraction],
                    deltas: Sequence[Fraction], gain_unit: np.ndarray,
                    gain_exact: Sequence[Sequence[Fraction]], party: int, worst: bool,
                    options: VerifyOptions) -> tuple[EnvelopeBound | None, FloatEnvelope]:
    """The proved envelope bound (normalised gains) at levels whose upper rational
    brackets are `lambdas_hi`, or None (the float LP's `failure` says why); and the float
    LP, whose least favourable prior and flow seed the witness search."""
    floats = float_envelope(lambdas, deltas, gain_unit, party, worst, options)
    return exact_envelope(floats, lambdas_hi, deltas, gain_exact, party), floats
