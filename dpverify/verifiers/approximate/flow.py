"""The envelope LP's flow played as a grid protocol, without an LP (docs/theory.md, section
7.11). The flow (envelope.py: theta, the mass stopped at each state; sigma, the mass moved
along each chord) is a Markov policy on the products of rays: at each state, shares of the
mass that reaches it stop there or move along a chord of some party. A chord of party j is
one of j's messages (it splits j's ray into two rays), so the flow is a protocol as soon as
it is given an order of speakers:

* every party first splits its unspoken factor into its corners, (1, 1) = c0 + c1 (the
  flow's mass 1 at every product of corners);
* mass arriving at a state is shared among the flow's options there, in the flow's
  proportions, and waits for that party's next round;
* in its round a party applies its chords, and again at the states they lead to: one
  message, the composed split of its ray (pieces below `tiny` stop);
* the next speaker is the party that the most mass waits for.

When no mass is left waiting, the final states' masses are the flow's stopped masses, and
the protocol's accuracy is the envelope's optimum: the bound is reached. A flow whose
moves cycle (a party's mass returning to a state) is cut after `max_rounds`, or when the
protocol would have more than `max_transcripts` transcripts; the mass then stops where it
is.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import numpy as np

from dpverify.records import record
from dpverify.theory.approx.envelope import Chords, state_digits
from dpverify.theory.approx.grid import RAYS, UNSPOKEN, encode
from dpverify.verifiers.approximate.schedule import (
    MAX_TRANSCRIPTS,
    Allowed,
    ScheduleObjective,
    ScheduleSolution,
    Split,
    finals_value,
)
from dpverify.verifiers.approximate.schedule import (
    USED as KAPPA_USED,
)
from dpverify.verifiers.options import VerifyOptions

USED = 1e-9  # a chord the flow moves less mass along than this is not one of its moves
TINY = 1e-15  # a piece of mass below this stops where it is
MAX_ROUNDS = 24
MAX_ORDERS = 120  # first speaking orders tried (k! up to k = 5)
PLAYED_OUT = 1e-12  # mass left waiting when a played flow counts as played out

Waiting = dict[int, np.ndarray]  # grid state -> mass waiting for each party (k: stopped)


@record(eq=False)
class Flow:
    """The envelope's flow (envelope.py's FloatEnvelope): stopped mass per state and label,
    moved mass per chord, the chords, and the parties' ray counts."""

    theta: np.ndarray
    sigma: np.ndarray
    chords: Chords
    counts: tuple[int, ...]


@record(eq=False)
class PlayedFlow:
    """The flow played: its schedule, its splits per round (ScheduleSolution.splits), the
    final states' masses, and the mass whose moves did not fit (0 when played out)."""

    schedule: tuple[int, ...]
    splits: tuple[dict[int, Split], ...]
    finals: dict[int, float]
    left: float

    @property
    def messages(self) -> tuple[int, ...]:
        return tuple(max((len(s) for s in rnd.values()), default=1) for rnd in self.splits)


def flow_allowed(flow: Flow) -> Allowed:
    """The targets the flow uses at each corner state (stay first), by party, in the
    grid's numbering (theory/approx/grid.py: five symbols per party)."""
    digits = state_digits(flow.counts)
    out: dict[tuple[int, int], list[int]] = {}
    ch = flow.chords
    for c in np.flatnonzero(flow.sigma > USED).tolist():
        j, s = int(ch.party[c]), int(ch.source[c])
        here = out.setdefault((j, encode(digits[s].tolist())), [int(digits[s][j])])
        for t in (ch.target1[c], ch.target2[c]):
            ray = int(digits[int(t)][j])
            if ray not in here:
                here.append(ray)
    return {key: tuple(v) for key, v in out.items()}


class _Player:
    """The rules of the module docstring, round by round."""

    def __init__(self, flow: Flow):
        self.flow = flow
        self.k = len(flow.counts)
        digits = state_digits(flow.counts)
        self.code_of = [encode(row.tolist()) for row in digits]
        self.flow_of = {c: s for s, c in enumerate(self.code_of)}
        self.options: dict[int, list[tuple[int, int, float]]] = {}
        stop = flow.theta.sum(axis=1)
        for s in np.flatnonzero(stop > 0).tolist():
            self.options.setdefault(s, []).append((-1, -1, float(stop[s])))
        for c in np.flatnonzero(flow.sigma > USED).tolist():
            self.options.setdefault(int(flow.chords.source[c]), []).append(
                (int(flow.chords.party[c]), c, float(flow.sigma[c])))
        for s, opts in self.options.items():
            total = sum(o[2] for o in opts)
            self.options[s] = [(j, c, w / total) for j, c, w in opts]

    def arrive(self, code: int, mass: float, j: int, ends: dict[int, float],
               queue: list[tuple[int, float]], arrived: Waiting) -> None:
        """`mass` reaches state `code` in party j's round: j's share moves on at once, the
        rest waits (in `arrived`) and ends its piece's journey here (`ends`)."""
        s = self.flow_of.get(code)
        opts = self.options.get(s, []) if s is not None else []
        if not opts or mass < TINY:
            opts = [(-1, -1, 1.0)]
        rest = 0.0
        for party, c, share in opts:
            if party == j:
                queue.append((c, mass * share))
            else:
                arrived.setdefault(code, np.zeros(self.k + 1))[
                    self.k if party < 0 else party] += mass * share
                rest += mass * share
        if rest:
            ends[code] = ends.get(code, 0.0) + rest

    def move(self, j: int, queue: list[tuple[int, float]], ends: dict[int, float],
             arrived: Waiting) -> None:
        ch = self.flow.chords
        while queue:
            c, mass = queue.pop()
            for t, w in ((ch.target1[c], ch.weight1[c]), (ch.target2[c], ch.weight2[c])):
                if w > 0:
                    self.arrive(self.code_of[int(t)], mass * float(w), j, ends, queue,
                                arrived)

    def first(self, j: int, before: dict[int, float], last: bool
              ) -> tuple[dict[int, Split], dict[int, float], Waiting]:
        """Party j's first round: (1, 1) = c0 + c1 at every state; when it is the last to
        speak for the first time, the flow starts at once (its moves composed)."""
        rnd: dict[int, Split] = {}
        arrived: Waiting = {}
        nxt: dict[int, float] = {}
        stride = RAYS ** (self.k - 1 - j)
        for code, mass in before.items():
            ends: dict[int, float] = {}
            for corner in (0, 1):
                target = code + (corner - UNSPOKEN) * stride
                if last:
                    queue: list[tuple[int, float]] = []
                    self.arrive(target, mass, j, ends, queue, arrived)
                    self.move(j, queue, ends, arrived)
                else:
                    nxt[target] = nxt.get(target, 0.0) + mass
                    ends[target] = ends.get(target, 0.0) + mass
            rnd[code] = split_of(code, mass, ends, j, self.k)
        return rnd, nxt, arrived

    def later(self, j: int, waiting: Waiting) -> tuple[dict[int, Split], Waiting]:
        """A later round of party j: its waiting mass moves, on copies of `waiting`."""
        rnd: dict[int, Split] = {}
        arrived: Waiting = {}
        after = {code: vec.copy() for code, vec in waiting.items()}
        for code, vec in after.items():
            wait = vec[j]
            if wait <= 0:
                continue
            total = float(vec.sum())
            vec[j] = 0.0
            ends = {code: total - wait}
            mine = [(c, share) for party, c, share in self.options[self.flow_of[code]]
                    if party == j]
            norm = sum(share for _, share in mine)
            queue = [(c, wait * share / norm) for c, share in mine]
            self.move(j, queue, ends, arrived)
            rnd[code] = split_of(code, total, ends, j, self.k)
        for code, vec in arrived.items():
            after[code] = after[code] + vec if code in after else vec
        return rnd, after


def next_speaker(waiting: Waiting, k: int, last: int | None) -> int | None:
    """The party that the most mass waits for (not the last speaker); None when none."""
    load = np.zeros(k)
    for vec in waiting.values():
        load += vec[:k]
    if last is not None:
        load[last] = 0.0
    return int(np.argmax(load)) if load.max() > TINY else None


def play(flow: Flow, order: Sequence[int], *, max_rounds: int = MAX_ROUNDS,
         max_transcripts: int = MAX_TRANSCRIPTS) -> PlayedFlow:
    """The flow played after the first speaking `order` (module docstring)."""
    player = _Player(flow)
    k = player.k
    played: list[int] = []
    splits: list[dict[int, Split]] = []
    size = 1
    before: dict[int, float] = {encode([UNSPOKEN] * k): 1.0}
    waiting: Waiting = {}
    while len(played) < max_rounds:
        if before:
            j = order[len(played)]
            rnd, nxt, after = player.first(j, before, len(played) == k - 1)
        else:
            speaker = next_speaker(waiting, k, played[-1] if played else None)
            if speaker is None:
                break
            j, nxt = speaker, {}
            rnd, after = player.later(j, waiting)
        messages = max((len(v) for v in rnd.values()), default=1)
        if size * messages > max_transcripts:
            break
        size *= messages
        played.append(j)
        splits.append(rnd)
        if not before or not nxt:
            waiting = after
        before = nxt
    if before:  # not every party spoke: the masses stop where they are
        return PlayedFlow(tuple(played), tuple(splits), dict(before), 0.0)
    finals = {code: float(v.sum()) for code, v in waiting.items() if v.sum() > 0}
    left = float(sum(v[:k].sum() for v in waiting.values()))
    return PlayedFlow(tuple(played), tuple(splits), finals, left)


def split_of(code: int, mass: float, ends: dict[int, float], j: int, k: int) -> Split:
    """The split of state `code`'s mass by party j, from where its pieces ended (stay
    first): kappa_t = the mass that ended with party j at ray t / the state's mass."""
    stride = RAYS ** (k - 1 - j)
    v = (code // stride) % RAYS
    by_ray: dict[int, float] = {}
    for end, m in ends.items():
        ray = (end // stride) % RAYS
        by_ray[ray] = by_ray.get(ray, 0.0) + m
    order = [v] + sorted(t for t in by_ray if t != v)
    return tuple((t, by_ray[t] / mass) for t in order if by_ray.get(t, 0.0) / mass > KAPPA_USED)


def play_flow(flow: Flow, obj: ScheduleObjective, options: VerifyOptions, *,
              deadline: float, max_transcripts: int = MAX_TRANSCRIPTS
              ) -> ScheduleSolution | None:
    """The flow played after every first speaking order (up to MAX_ORDERS of them, while
    time lasts): the played-out protocol with the fewest transcripts, or, when none is
    played out within `max_transcripts`, the best value among the three that leave the
    least mass unmoved."""
    k = len(flow.counts)
    plays: list[PlayedFlow] = []
    for n, order in enumerate(itertools.permutations(range(k))):
        if n >= MAX_ORDERS or (plays and time.perf_counter() > deadline):
            break
        plays.append(play(flow, order, max_transcripts=max_transcripts))
    done = [p for p in plays if p.left <= PLAYED_OUT]
    pick = [min(done, key=lambda p: math.prod(p.messages))] if done else \
        sorted(plays, key=lambda p: p.left)[:3]
    best = None
    for p in pick:
        sol = ScheduleSolution(p.schedule, finals_value(obj, p.finals, options), p.splits)
        if best is None or sol.value > best.value:
            best = sol
    return best


__all__ = ["Flow", "PlayedFlow", "flow_allowed", "play", "play_flow"]
