"""Explicit interactive protocols (`kind = "protocol"`) as frozen, self-validating dataclasses.

A protocol file describes a protocol round by round (docs/format.md, "Protocol files"):
in round r party `party_r` speaks once, drawing a message m_r from 0..messages_r-1 with the
distribution `kernel_r[prefix][x_party_r]`, where `prefix` is the sequence of earlier
messages. The transcript is the sequence of every message, so

    P(t | x) = prod_r kernel_r[m_1..m_(r-1)][x_(party_r)][m_r]

(docs/theory.md, "Protocol audits"). A party's kernel rows are indexed by its input
symbol, 0..alphabet-1 (2 for bits, the loader's default).

The model validates itself: a spec built in code obeys the same rules as one loaded from
a file (the loader's messages are friendlier and come first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpverify.spec.model import Accuracy, AgentSpec, Expectation, Kind, MultipartySpec
from dpverify.spec.numbers import STOCHASTIC_TOL
from dpverify.spec.setting import Setting

# A kernel: one row per input symbol of the speaker, one entry per message.
Kernel = tuple[tuple[Fraction, ...], ...]

DEFAULT_KEY = "*"  # the kernel of every prefix that has none of its own
# Size guards (bad input, exit 2): the transcripts are enumerated, and P(t | x) has one
# entry per input and transcript.
MAX_TRANSCRIPTS = 1 << 16
MAX_CELLS = 1 << 22  # inputs x transcripts
MAX_PROTOCOL_PARTIES = 16
# Rows of a kernel written with TOML floats must sum to 1 within this (exact otherwise).


def prefix_key(prefix: tuple[int, ...]) -> str:
    """The key of a prefix in a keyed kernel: the earlier messages joined with ","."""
    return ",".join(str(m) for m in prefix)


@dataclass(frozen=True)
class RoundSpec:
    """One round: `party` (1-based) speaks once, with `messages` possible messages.

    `kernels` maps prefix keys ("" for the first round, "0,2" later, "*" the default) to
    kernels; a kernel written as one matrix is the default of every prefix. `key` is the
    round's path in the file (`round[0]`).
    """

    party: int
    messages: int
    kernels: tuple[tuple[str, Kernel], ...]
    key: str = ""
    # the lookup by key, built once (a keyed round may have 65,536 keys)
    _table: dict[str, Kernel] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_table", dict(self.kernels))

    def kernel(self, prefix: tuple[int, ...]) -> Kernel | None:
        """The kernel used after `prefix`, or None when neither it nor "*" is given."""
        found = self._table.get(prefix_key(prefix))
        return found if found is not None else self._table.get(DEFAULT_KEY)

    def kernel_index(self, sizes: Sequence[int]) -> tuple[list[Kernel], np.ndarray]:
        """The round's distinct kernels, and for every prefix (numbered in mixed radix by
        the earlier rounds' `sizes`, first message most significant) the index of its
        kernel among them, or -1 when it has none. One pass over the keys: linear in their
        number. ValueError for a key that is not a prefix of this round."""
        distinct: list[Kernel] = []
        slots: dict[int, int] = {}  # by identity: hashing Fractions costs more than it saves

        def slot(kernel: Kernel) -> int:
            if id(kernel) not in slots:
                slots[id(kernel)] = len(distinct)
                distinct.append(kernel)
            return slots[id(kernel)]

        default = self._table.get(DEFAULT_KEY)
        which = np.full(math.prod(sizes), -1 if default is None else slot(default),
                        dtype=np.int64)
        for key, kernel in self.kernels:
            if key == DEFAULT_KEY:
                continue
            parts = key.split(",") if key else []
            if len(parts) != len(sizes):
                raise ValueError(f"{key!r} is not a prefix of a round after {len(sizes)}")
            index = 0
            for part, size in zip(parts, sizes, strict=True):
                m = int(part)
                if not 0 <= m < size:
                    raise ValueError(f"{key!r}: message {m} does not exist (0..{size - 1})")
                index = index * size + m
            which[index] = slot(kernel)
        return distinct, which


def transcript_count(rounds: tuple[RoundSpec, ...]) -> int:
    return math.prod(r.messages for r in rounds)


def prefix_of(index: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """The messages of prefix number `index` (mixed radix, first message most significant)."""
    out = []
    for size in reversed(sizes):
        index, m = divmod(index, size)
        out.append(m)
    return tuple(reversed(out))


def uncovered_prefix(rounds: tuple[RoundSpec, ...], alphabets: tuple[int, ...]
                     ) -> tuple[int, tuple[int, ...]] | None:
    """The first (round index, prefix) that some input reaches with positive probability
    and that has no kernel (neither its own nor "*"); None when every reachable prefix is
    covered. Unreachable prefixes need no kernel: no transcript passes through them.
    Vectorised per round (reach[x, prefix]: P(prefix | x) > 0)."""
    n = math.prod(alphabets)
    symbols = _symbols(alphabets)
    reach = np.ones((n, 1), dtype=bool)
    sizes: list[int] = []
    for r, rnd in enumerate(rounds):
        kernels, which = rnd.kernel_index(sizes)
        missing = np.flatnonzero(reach.any(axis=0) & (which < 0))
        if missing.size:
            return r, prefix_of(int(missing[0]), sizes)
        m, M = alphabets[rnd.party - 1], rnd.messages
        positive = np.zeros((len(kernels) + 1, m, M), dtype=bool)  # the last: no kernel
        for j, kernel in enumerate(kernels):
            positive[j] = [[v > 0 for v in row] for row in kernel]
        rows = positive[which][:, symbols[:, rnd.party - 1], :]  # (prefixes, n, M)
        reach = (reach.T[:, :, None] & rows).transpose(1, 0, 2).reshape(n, -1)
        sizes.append(M)
    return None


def _symbols(alphabets: tuple[int, ...]) -> np.ndarray:
    """(n, k) array of every input's symbols, x1 the most significant (mixed radix)."""
    grids = np.indices(alphabets).reshape(len(alphabets), -1)
    return grids.T.astype(np.int64)


def _check_kernel(kernel: Kernel, rows: int, messages: int, exact: bool, where: str) -> None:
    if len(kernel) != rows or any(len(row) != messages for row in kernel):
        raise ValueError(f"{where}: a kernel needs {rows} rows of {messages} entries")
    for row in kernel:
        if any(v < 0 for v in row):
            raise ValueError(f"{where}: kernel entries must be >= 0: {row}")
        total = sum(row, Fraction(0))
        if (total != 1) if exact else abs(total - 1) > STOCHASTIC_TOL:
            raise ValueError(f"{where}: every kernel row must sum to 1: {row}")


@dataclass(frozen=True, eq=False)
class ProtocolSpec:
    """An explicit protocol and the privacy levels it claims (`lambdas`, as in a
    multi-party problem: `lambdas_exact` when given through `lambda`, `epsilons_exact`
    through `epsilon`), with the agents whose accuracy is audited.

    `alphabets[i]` is party i+1's number of input symbols (2: bits). `exact` is True when
    no kernel entry was written as a TOML float: then every kernel row sums to 1 exactly
    and the audit computes in exact arithmetic.
    """

    name: str
    description: str
    source: str
    parties: int
    lambdas: tuple[float, ...]
    lambdas_exact: tuple[Fraction, ...] | None
    epsilons_exact: tuple[Fraction, ...] | None
    accuracies: tuple[Accuracy, ...]
    agents: tuple[AgentSpec, ...]
    rounds: tuple[RoundSpec, ...]
    alphabets: tuple[int, ...] = ()
    exact: bool = True
    expect: tuple[Expectation, ...] = ()
    # the claimed approximate privacy (KOV eq. 12): delta_i per party; () means all 0
    deltas: tuple[Fraction, ...] = ()
    # the multi-party problem at the claimed levels (derived once, in __post_init__)
    _claimed: MultipartySpec = field(init=False, repr=False)

    kind: ClassVar[Kind] = Kind.PROTOCOL

    def __post_init__(self) -> None:
        if not self.alphabets:
            object.__setattr__(self, "alphabets", (2,) * self.parties)
        # the claimed levels and the agents obey the multi-party rules (it validates itself)
        object.__setattr__(self, "_claimed", MultipartySpec(
            name=self.name, description=self.description, source=self.source,
            parties=self.parties, lambdas=self.lambdas, lambdas_exact=self.lambdas_exact,
            epsilons_exact=self.epsilons_exact, accuracies=self.accuracies,
            agents=self.agents, alphabets=self.alphabets, deltas=self.deltas))
        object.__setattr__(self, "deltas", self._claimed.deltas)
        k = self.parties
        if k > MAX_PROTOCOL_PARTIES or len(self.alphabets) != k or \
                any(m < 2 for m in self.alphabets):
            raise ValueError(f"alphabets must be {k} sizes >= 2 (k <= {MAX_PROTOCOL_PARTIES})")
        if not self.rounds:
            raise ValueError("a protocol needs at least one round")
        count = transcript_count(self.rounds)
        if count > MAX_TRANSCRIPTS or count * self.num_inputs > MAX_CELLS:
            raise ValueError(f"too many transcripts: {count}")
        for r, rnd in enumerate(self.rounds):
            if not 1 <= rnd.party <= k or rnd.messages < 1:
                raise ValueError(f"round {r}: party must be in 1..{k} and messages >= 1")
            for key, kernel in rnd.kernels:
                _check_kernel(kernel, self.alphabets[rnd.party - 1], rnd.messages,
                              self.exact, f"round {r}, prefix {key!r}")
        missing = uncovered_prefix(self.rounds, self.alphabets)
        if missing is not None:
            raise ValueError(f"round {missing[0]}: no kernel for the reachable prefix "
                             f"{prefix_key(missing[1])!r}")

    @property
    def num_inputs(self) -> int:
        return math.prod(self.alphabets)

    @property
    def approximate(self) -> bool:
        """Whether the protocol claims approximate privacy (some delta > 0)."""
        return any(self.deltas)

    @property
    def setting(self) -> Setting:
        """The setting of the levels it claims (spec/setting.py)."""
        return self._claimed.setting

    @property
    def num_transcripts(self) -> int:
        return transcript_count(self.rounds)

    def claimed(self) -> MultipartySpec:
        """The multi-party problem at the claimed levels, with the same agents: its relaxed
        optimum bounds every protocol that meets those levels (KOV Theorem 3.1). The same
        object every time, so its agents' tables are tabulated once."""
        return self._claimed

    def at_levels(self, lambdas: tuple[Fraction, ...]) -> MultipartySpec:
        """The multi-party problem at other (finite, exact) levels, such as the achieved
        ones, with the same agents."""
        return MultipartySpec(
            name=self.name, description=self.description, source=self.source,
            parties=self.parties, lambdas=tuple(float(v) for v in lambdas),
            lambdas_exact=tuple(lambdas), epsilons_exact=None, accuracies=self.accuracies,
            agents=self.agents, alphabets=self.alphabets)
