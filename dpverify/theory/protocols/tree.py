"""A protocol's prefix tree, walked once: each transcript's factor per party, the classes of
transcripts with proportional columns, the exact privacy levels, and P on the classes.

docs/theory.md, sections 5.1 and 5.2. Every column of P is rank-one (KOV 2015, eq. (8)):

    P(t | x) = u_1(t)[x_1] * ... * u_k(t)[x_k]

where u_j(t) is the product, over the rounds in which party j speaks, of the column of its
kernel that t takes. Each u_j is kept as a *primitive* integer vector (entries >= 0, gcd 1)
times a positive scalar that goes into the transcript's weight, so that

    P(., t) = weight(t) * (v_1(t) (x) ... (x) v_k(t))      (v_j primitive, x1 first)

* **Levels, without P.** Where the other parties' factors are positive they cancel, so
  P(t | x_i = a, x_-i) / P(t | x_i = b, x_-i) = v_i(t)[a] / v_i(t)[b]; a transcript that no
  input reaches (some v_j = 0) constrains nobody (0/0). So

      lambda_i* = max over reached t of max(v_i(t)) / min(v_i(t))    (inf when min = 0)

  exactly, whatever the size of P (theory.md 5.2).
* **Classes.** Two transcripts with the same (v_1, ..., v_k) have proportional columns. The
  agents' accuracies under their optimal rules (KOV eqs. (2), (4), (5), (6)) are the same on
  P as on P with those columns summed, and the rule found for the sum serves every member:
  the average's scores are proportional, and the worst case's LP (W) takes any rule for
  the sum to the same per-input accuracy on the members. So P is built on the classes only,
  exactly, as integers over one denominator (a weight of a class is the sum of its members').

Kernels are exact rationals; a float kernel's rows are the binary rationals written, each
divided by its exact sum (so that every row is exactly a distribution).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpverify.records import record
from dpverify.spec.protocol_model import Kernel, ProtocolSpec
from dpverify.theory.protocols.transcripts import Level, Transcripts

Vector = tuple[int, ...]


@record(eq=False)
class TranscriptClasses:
    """The classes of reached transcripts with proportional columns.

    `vectors[j]` lists party j's distinct primitive factors (index 0: all ones); class c
    has factor `vectors[j][ids[c, j]]` for party j and weight `weights[c] / den` (None when
    the weights would exceed the size budget); `members[t]` is transcript t's class, -1
    when no input reaches it. `cell_bits` bounds the bits of an entry of P's numerators."""

    alphabets: tuple[int, ...]
    sizes: tuple[int, ...]
    vectors: tuple[tuple[Vector, ...], ...]
    ids: np.ndarray
    members: np.ndarray
    weights: tuple[int, ...] | None
    den: int
    cell_bits: int

    @property
    def count(self) -> int:
        return int(self.ids.shape[0])

    def levels(self) -> tuple[Level, ...]:
        """lambda_i* for every party (module docstring): Fractions, or math.inf."""
        out: list[Level] = []
        for j in range(len(self.alphabets)):
            best: Level = Fraction(1)
            for v in np.unique(self.ids[:, j]).tolist():
                vector = self.vectors[j][v]
                low = min(vector)
                if low == 0:
                    best = math.inf
                    break
                best = max(best, Fraction(max(vector), low))
            out.append(best)
        return tuple(out)

    def matrix_bytes(self) -> int:
        """About the memory P on the classes takes as Python integers."""
        n = math.prod(self.alphabets)
        return n * self.count * (40 + self.cell_bits // 8)

    def transcripts(self) -> Transcripts:
        """P on the classes, exactly: column c is weights[c] * (v_1 (x) ... (x) v_k) over
        `den`; `members` maps every transcript to its column."""
        if self.weights is None:
            raise ValueError("the class weights were not kept (over the size budget)")
        C = self.count
        P = np.empty((C, 1), dtype=object)
        P[:, 0] = list(self.weights)
        for j in range(len(self.alphabets)):
            V = np.empty((C, self.alphabets[j]), dtype=object)
            V[:] = [self.vectors[j][v] for v in self.ids[:, j].tolist()]
            P = (P[:, :, None] * V[:, None, :]).reshape(C, -1)
        return Transcripts(self.alphabets, self.sizes, np.ascontiguousarray(P.T), self.den,
                           True, members=self.members)


def _rows(kernel: Kernel, exact: bool) -> Kernel:
    """An exact kernel as it is; a float kernel's rows divided by their exact sums."""
    if exact:
        return kernel
    out = []
    for row in kernel:
        total = sum(row, Fraction(0))
        out.append(tuple(Fraction(v) / total for v in row))
    return tuple(out)


def _columns(kernel: Kernel, exact: bool) -> list[tuple[tuple[int, ...], int]]:
    """Each message's column of the kernel (its entries per input symbol) as integers over
    their least common denominator."""
    rows = _rows(kernel, exact)
    out = []
    for m in range(len(rows[0])):
        column = [row[m] for row in rows]
        den = math.lcm(*(Fraction(v).denominator for v in column))
        out.append((tuple(int(v * den) for v in column), den))
    return out


def _step(vector: Vector, column: tuple[tuple[int, ...], int]) -> tuple[Vector | None, Fraction]:
    """vector * column (entrywise) as (a primitive integer vector, its scale); None for
    the zero vector."""
    ints = [v * c for v, c in zip(vector, column[0], strict=True)]
    g = math.gcd(*ints)
    if g == 0:
        return None, Fraction(0)
    return tuple(i // g for i in ints), Fraction(g, column[1])


def _speak(vectors: list[Vector], known: dict[Vector, int], kernels: list[Kernel],
           exact: bool, pairs: np.ndarray, M: int) -> tuple[np.ndarray, list[list[Fraction]]]:
    """One round's steps, once per distinct (kernel, speaker's factor) pair: for each
    message, the speaker's new factor (an index into `vectors`, grown as needed; -1 when
    no input sends it) and the scale taken out of it."""
    new_id = np.full((len(pairs), M), -1, dtype=np.int64)
    scales: list[list[Fraction]] = []
    columns_of: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    for q, (kid, v) in enumerate(pairs.tolist()):
        if kid not in columns_of:
            columns_of[kid] = _columns(kernels[kid], exact)
        row_scales = []
        for m, column in enumerate(columns_of[kid]):
            vector, scale = _step(vectors[v], column)
            if vector is not None:
                if vector not in known:
                    known[vector] = len(vectors)
                    vectors.append(vector)
                new_id[q, m] = known[vector]
            row_scales.append(scale)
        scales.append(row_scales)
    return new_id, scales


def _integer_factors(scales: list[list[Fraction]]) -> tuple[np.ndarray, int]:
    """A round's scales as integers over one denominator (the lcm of theirs)."""
    used = [f for row in scales for f in row if f]
    den = math.lcm(*(f.denominator for f in used)) if used else 1
    return np.array([[int(f * den) for f in row] for row in scales], dtype=object), den


def transcript_classes(spec: ProtocolSpec, max_bytes: int | None = None
                       ) -> TranscriptClasses:
    """Walk the prefix tree round by round (module docstring). Prefixes are numbered in
    mixed radix, first message most significant; per prefix: each party's factor (an index
    into `vectors`), whether some input reaches it, and its integer weight (over the product
    of the rounds' denominators). The weights are dropped (None) when they alone would take
    more than about `max_bytes` (P, larger still, is then too large to hold exactly)."""
    k = len(spec.alphabets)
    vectors: list[list[Vector]] = [[(1,) * m] for m in spec.alphabets]
    known: list[dict[Vector, int]] = [{vs[0]: 0} for vs in vectors]
    ids = np.zeros((1, k), dtype=np.int64)
    alive = np.ones(1, dtype=bool)
    weights: np.ndarray | None = np.array([1], dtype=object)
    den, bits = 1, 0
    sizes: list[int] = []
    for rnd in spec.rounds:
        M, s = rnd.messages, rnd.party - 1
        sizes.append(M)
        if M == 1:  # one message, probability 1 for every input: nothing changes
            continue
        kernels, which = rnd.kernel_index(sizes[:-1])
        live = np.flatnonzero(alive)
        if (which[live] < 0).any():  # the spec refuses this (uncovered_prefix)
            raise ValueError("a reached prefix has no kernel")
        pairs, inverse = np.unique(np.stack([which[live], ids[live, s]], axis=1), axis=0,
                                   return_inverse=True)
        new_id, scales = _speak(vectors[s], known[s], kernels, spec.exact, pairs, M)
        chosen = new_id[inverse.reshape(-1)].reshape(-1)
        children = (live[:, None] * M + np.arange(M)[None, :]).reshape(-1)
        ids = np.repeat(ids, M, axis=0)
        ids[children, s] = chosen
        alive = np.zeros(len(which) * M, dtype=bool)
        alive[children] = chosen >= 0
        if weights is not None:
            factor, step_den = _integer_factors(scales)
            bits += max((int(v).bit_length() for v in factor.ravel().tolist()), default=0)
            grown = None
            if max_bytes is None or len(children) * (40 + bits // 8) <= max_bytes:
                grown = np.zeros(len(alive), dtype=object)
                grown[children] = (np.repeat(weights[live], M)
                                   * factor[inverse.reshape(-1)].reshape(-1))
                den *= step_den
            weights = grown
    return _classes(spec, sizes, vectors, ids, alive, weights, den, bits)


def _classes(spec: ProtocolSpec, sizes: list[int], vectors: list[list[Vector]],
             ids: np.ndarray, alive: np.ndarray, weights: np.ndarray | None, den: int,
             bits: int) -> TranscriptClasses:
    """The reached transcripts grouped by their factors, with the classes' weights."""
    reached = np.flatnonzero(alive)
    keys, inverse = np.unique(ids[reached], axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    members = np.full(len(alive), -1, dtype=np.int64)
    members[reached] = inverse
    class_weights: tuple[int, ...] | None = None
    if weights is not None:
        sums = [0] * len(keys)
        for c, w in zip(inverse.tolist(), weights[reached].tolist(), strict=True):
            sums[c] += w
        g = math.gcd(den, *sums)
        class_weights, den = tuple(w // g for w in sums), den // g
    cell_bits = bits + max(1, len(reached)).bit_length() + sum(
        max(max(v).bit_length() for v in vs) for vs in vectors)
    return TranscriptClasses(tuple(spec.alphabets), tuple(sizes),
                             tuple(tuple(vs) for vs in vectors), keys, members, class_weights,
                             den, cell_bits)
