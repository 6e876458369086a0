"""Explicit interactive protocols: transcripts, P(t | x), the privacy levels a protocol
achieves, and its agents' optimal decision rules on the explicit transcripts.

docs/theory.md, "Protocol audits". A protocol is a sequence of rounds; in round r party
s_r draws message m_r from the kernel K_r[prefix][x_(s_r)], so

    P(t | x) = prod_r K_r[m_1..m_(r-1)][x_(s_r)][m_r]                          (1)

Every column of P is rank-one by construction (KOV 2015, eq. (8)): the factors of party i
are the product of its own kernels along t. So for inputs x, x' that differ only in x_i,
P(t | x) / P(t | x') is the product of party i's own kernel ratios along t, and

    lambda_i* = max over t, x_-i and a != b of P(t | x_i = a, x_-i) / P(t | x_i = b, x_-i)

(infinite when a numerator is positive over a zero denominator). Rounds compose
multiplicatively.

Inputs are numbered in mixed radix with x1 the most significant symbol (big-endian, as
everywhere in dpverify); transcripts likewise, with the first message most significant.
Exact protocols keep P as Python integers over one common denominator (`Transcripts`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.spec.protocol_model import ProtocolSpec

Level = Fraction | float  # an achieved lambda: exact, a float, or math.inf


def input_symbols(alphabets: Sequence[int]) -> np.ndarray:
    """(n, k) array: the symbols of every input, x1 first (the most significant)."""
    grids = np.indices(tuple(alphabets)).reshape(len(alphabets), -1)
    return grids.T.astype(np.int64)


def own_symbol_masks(alphabets: Sequence[int], party: int) -> list[np.ndarray]:
    """For party i (1-based): a boolean mask of the inputs with x_i = a, for each symbol a."""
    column = input_symbols(alphabets)[:, party - 1]
    return [column == a for a in range(alphabets[party - 1])]


def transcript_labels(sizes: Sequence[int]) -> list[str]:
    """Each transcript's messages joined with "," (the order of P's columns)."""
    grids = np.indices(tuple(sizes)).reshape(len(sizes), -1).T
    return [",".join(str(int(m)) for m in row) for row in grids]


@record(eq=False)
class Transcripts:
    """P(t | x) of a protocol, rows: the inputs, columns: the transcripts.

    Exact: `num` holds Python integers and P = num / den. Floats: `num` is float64 and
    `den` is 1. With `members`, the columns are classes of transcripts with proportional
    columns (theory/protocols/tree.py): `members[t]` is transcript t's column, -1 when no
    input reaches t; without, column t is transcript t.
    """

    alphabets: tuple[int, ...]
    sizes: tuple[int, ...]  # each round's number of messages
    num: np.ndarray
    den: int
    exact: bool
    members: np.ndarray | None = None

    def floats(self) -> np.ndarray:
        """P as floats (computed once)."""
        if not self.exact:
            return self.num
        return self._floats

    @functools.cached_property
    def _floats(self) -> np.ndarray:
        if self.den.bit_length() < 1000:  # int -> float rounds once, then one division
            return self.num.astype(np.float64) / float(self.den)
        # int / int is correctly rounded in Python, subnormals included
        den = self.den
        return np.array([[int(v) / den for v in row] for row in self.num.tolist()],
                        dtype=np.float64).reshape(self.num.shape)

    def expand(self, rule: np.ndarray) -> np.ndarray:
        """A rule on the columns (Q[..., column, y]) as a rule on every transcript: a
        member of a class decides as its class, a transcript no input reaches decides the
        first output."""
        if self.members is None:
            return rule
        out = np.zeros(rule.shape[:-2] + (len(self.members), rule.shape[-1]), dtype=rule.dtype)
        out[..., 0] = 1
        reached = self.members >= 0
        out[..., reached, :] = rule[..., self.members[reached], :]
        return out

    @property
    def count(self) -> int:
        return int(self.num.shape[1])


def propagate(alphabets: Sequence[int], speakers: Sequence[int],
              kernels: Sequence[np.ndarray]) -> np.ndarray:
    """P by eq. (1): `kernels[r]` has shape (prefixes of round r, speaker's symbols,
    messages); float arrays give floats, object arrays of ints give integer numerators."""
    symbols = input_symbols(alphabets)
    n = symbols.shape[0]
    exact = bool(kernels) and kernels[0].dtype.kind == "O"
    P = np.array([[1]] * n, dtype=object) if exact else np.ones((n, 1))
    for speaker, K in zip(speakers, kernels, strict=True):
        rows = K[:, symbols[:, speaker - 1], :]  # (prefixes, n, messages)
        P = (P.T[:, :, None] * rows).transpose(1, 0, 2).reshape(n, -1)
    return P


def kernel_arrays(spec: ProtocolSpec, exact: bool) -> tuple[list[np.ndarray], int]:
    """Each round's kernels per prefix (zeros for prefixes no input reaches), as floats, or
    as integers over a per-round common denominator; returns (arrays, their denominator)."""
    arrays: list[np.ndarray] = []
    den = 1
    prefixes = 1
    for rnd in spec.rounds:
        m, M = spec.alphabets[rnd.party - 1], rnd.messages
        table = dict(rnd.kernels)
        distinct = list(table.values())
        index = {id(k): j for j, k in enumerate(distinct)}
        zero = len(distinct)
        sizes = [r.messages for r in spec.rounds[:len(arrays)]]
        which = np.full(prefixes, zero, dtype=np.int64)
        default = table.get("*")
        labels = transcript_labels(sizes) if sizes else [""]
        for p, label in enumerate(labels):
            kernel = table.get(label, default)
            if kernel is not None:
                which[p] = index[id(kernel)]
        if exact:
            d = math.lcm(*(v.denominator for k in distinct for row in k for v in row))
            stack = np.array([[[int(v * d) for v in row] for row in k] for k in distinct]
                             + [[[0] * M] * m], dtype=object).reshape(zero + 1, m, M)
            den *= d
        else:
            stack = np.array([[[float(v) for v in row] for row in k] for k in distinct]
                             + [[[0.0] * M] * m], dtype=np.float64).reshape(zero + 1, m, M)
        arrays.append(stack[which])
        prefixes *= M
    return arrays, den


def transcripts(spec: ProtocolSpec, exact: bool | None = None) -> Transcripts:
    """P(t | x) of a protocol file, exact when its kernels are (or as asked)."""
    exact = spec.exact if exact is None else exact
    arrays, den = kernel_arrays(spec, exact)
    P = propagate(spec.alphabets, [r.party for r in spec.rounds], arrays)
    return Transcripts(spec.alphabets, tuple(r.messages for r in spec.rounds), P,
                       den if exact else 1, exact)


# -- privacy actually achieved -------------------------------------------------------------
def achieved_lambda(tr: Transcripts, party: int) -> Level:
    """lambda_i* (module docstring): exact for exact transcripts, math.inf when unbounded.

    Where both probabilities are positive the ratio does not depend on x_-i (the other
    parties' factors cancel), so each transcript's ratio is read at its first such row.
    """
    axis = party - 1
    shape = tr.alphabets + (tr.count,)
    cube = tr.num.reshape(shape)
    best: Level = Fraction(1) if tr.exact else 1.0
    for a in range(tr.alphabets[axis]):
        for b in range(tr.alphabets[axis]):
            if a == b:
                continue
            A = np.take(cube, a, axis=axis).reshape(-1, tr.count)
            B = np.take(cube, b, axis=axis).reshape(-1, tr.count)
            positive_a, positive_b = A > 0, B > 0
            if (positive_a & ~positive_b).any():
                return math.inf
            both = positive_a & positive_b
            live = np.flatnonzero(both.any(axis=0))
            rows = both.argmax(axis=0)[live]
            if live.size == 0:
                continue
            if tr.exact:
                ratio: Level = max(Fraction(int(A[r, t]), int(B[r, t]))
                                   for r, t in zip(rows.tolist(), live.tolist(), strict=True))
            else:
                ratio = float(np.max(A[rows, live] / B[rows, live]))
            best = max(best, ratio)
    return best


def achieved_lambdas(tr: Transcripts) -> tuple[Level, ...]:
    return tuple(achieved_lambda(tr, i + 1) for i in range(len(tr.alphabets)))


def level_epsilon(level: Level) -> float:
    """epsilon = log(lambda) (math.inf when unbounded)."""
    if level == math.inf:
        return math.inf
    if isinstance(level, Fraction):
        return math.log(level.numerator) - math.log(level.denominator)
    return math.log(level)


# -- decision rules on explicit transcripts (KOV 2015, eqs. (2), (5)) -------------------
def relevant_masks(alphabets: Sequence[int], party: int) -> list[np.ndarray]:
    """The input sets an agent decides over: all inputs for the observer (party 0), one
    set per own symbol for a party (it knows its own input)."""
    if party == 0:
        return [np.ones(math.prod(alphabets), dtype=bool)]
    return own_symbol_masks(alphabets, party)


def average_value(tr: Transcripts, gain: np.ndarray, party: int
                  ) -> tuple[Fraction | float, np.ndarray]:
    """The agent's average accuracy under its optimal rule, and the rule Q[a, t, y] (one
    block per own symbol; one block for the observer): KOV eqs. (2) and (5),
    yhat(t) = argmax_y sum_x P[x, t] w(f(x), y), the sum over the inputs the agent
    considers possible. `gain` is (n, m): floats, or Fractions (object) for exact
    transcripts; ties go to the first output."""
    n = tr.num.shape[0]
    rules = []
    if tr.exact:
        gden = math.lcm(*(Fraction(v).denominator for v in gain.ravel()))
        G = np.array([[int(Fraction(v) * gden) for v in row] for row in gain], dtype=object)
        total = 0
        for mask in relevant_masks(tr.alphabets, party):
            scores = tr.num[mask].T.dot(G[mask])  # (T, m) integers
            best = scores.max(axis=1)
            total += int(sum(best.tolist()))
            rules.append(_argmax_rule(np.array(scores.tolist(), dtype=object)))
        return Fraction(total, n * tr.den * gden), np.stack(rules)
    value = 0.0
    for mask in relevant_masks(tr.alphabets, party):
        scores = tr.num[mask].T @ gain[mask]
        value += float(scores.max(axis=1).sum())
        rules.append(_argmax_rule(scores))
    return value / n, np.stack(rules)


def _first_max(row: Sequence) -> int:
    best = 0
    for j, v in enumerate(row):
        if v > row[best]:
            best = j
    return best


def _argmax_rule(scores: np.ndarray) -> np.ndarray:
    """Q[t, y] in {0, 1}: the first maximiser of each row."""
    if scores.dtype.kind == "O":  # exact integers
        best = np.array([_first_max(row) for row in scores.tolist()], dtype=np.int64)
    else:
        best = np.argmax(scores, axis=1)
    rule = np.zeros(scores.shape, dtype=np.float64)
    rule[np.arange(scores.shape[0]), best] = 1.0
    return rule


def per_input_accuracy(P: np.ndarray, gain: np.ndarray, rule: np.ndarray,
                       alphabets: Sequence[int], party: int) -> np.ndarray:
    """E[w(f(x), yhat) | x] = sum_t sum_y P[x, t] Q[t, y] w(f(x), y), floats; a party's
    rule is Q[a, t, y] with a = x_party (its own symbol)."""
    out = np.zeros(P.shape[0])
    for a, mask in enumerate(relevant_masks(alphabets, party)):
        out[mask] = np.einsum("xt,ty,xy->x", P[mask], rule[a], gain[mask])
    return out


# -- randomized response as a protocol (KOV 2015, Section 3) --------------------------------
def rr_kernel(lam: Level) -> list[list[Fraction | float]]:
    """Party i's RR channel [[lambda, 1], [1, lambda]] / (1 + lambda) as kernel rows; the
    identity when lambda is infinite (no privacy)."""
    if lam == math.inf:
        return [[1.0, 0.0], [0.0, 1.0]]
    if isinstance(lam, Fraction):
        return [[lam / (1 + lam), 1 / (1 + lam)], [1 / (1 + lam), lam / (1 + lam)]]
    return [[lam / (1.0 + lam), 1.0 / (1.0 + lam)], [1.0 / (1.0 + lam), lam / (1.0 + lam)]]


def rr_transcripts(lambdas: Sequence[Level]) -> Transcripts:
    """RR written as a protocol: party i speaks in round i, once, with its RR channel, so
    the transcripts are the released bits and P = S_1 (x) ... (x) S_k = P_RR. Floats."""
    k = len(lambdas)
    kernels = [np.array([rr_kernel(lam)], dtype=np.float64).astype(np.float64)
               for lam in lambdas]
    kernels = [np.repeat(K, 1 << i, axis=0) for i, K in enumerate(kernels)]
    P = propagate((2,) * k, list(range(1, k + 1)), kernels)
    return Transcripts((2,) * k, (2,) * k, P, 1, False)
