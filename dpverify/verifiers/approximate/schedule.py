"""The search for the best interactive protocol under (epsilon_i, delta_i)-DP: for a
schedule of speakers, the best grid protocol (theory/approx/grid.py) is one LP, and the
schedule grows one round at a time (docs/theory.md, section 7.11).

**The schedule LP.** For speakers j_1, ..., j_R, a variable y[r, s, t] >= 0 per round r,
state s the round can reach and target t of the speaker's ray v = s_j (grid.targets): the
mass that leaves s for s with party j at t. Its rows:

    sum_t y[r, s, t] t[x] = v[x] * (mass arriving at s)       x = 0, 1     (the split)
    mass arriving at s in round 0: 1 at the all-unspoken state

and after the last round theta[s, l] >= 0, sum_l theta[s, l] = the mass arriving at s,
with the hockey-stick rows and the objective of the envelope LP on theta (the columns of
the final states, with the unspoken (1, 1) among the rays). Any solution is a grid
protocol with that schedule and that accuracy: in round r, at state s, the speaker sends
one message per target with kappa_t = y[r, s, t] / mass(s). Every grid protocol's final
states are a feasible point of the envelope LP, so the schedule LP's optimum is at most the
envelope bound; as the schedule grows it reaches it when the envelope's flow has no cycle
(docs/theory.md 7.11).

**The schedule.** Rounds are added greedily: each candidate speaker (not the one who just
spoke) is tried, the best value kept, until the value reaches `stop_at` (the proved bound),
the protocol would have more than `max_transcripts` transcripts (each round's message
count is the most targets any state uses in it), or `deadline` passes.

Everything here is in floats, in normalised gains; witness.py makes the best protocol
exact and values it again from its file.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dpverify.lp import solve
from dpverify.lp.builder import LpBuilder
from dpverify.theory.approx.envelope import Chords, state_digits
from dpverify.theory.approx.grid import RAYS, UNSPOKEN, encode, float_rays, targets
from dpverify.theory.approx.rays import agent_label_gains
from dpverify.theory.approx.rr import REVEAL_0, REVEAL_1
from dpverify.theory.protocols.transcripts import Transcripts
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value

USED = 1e-13  # a target whose kappa is below this is not used (solver noise)
MAX_TRANSCRIPTS = 1 << 15  # leaves room for the witness's repair coin (a doubling)
MAX_ROUNDS = 24
SOLVER = "ipm"
MAX_ORDERS = 120  # first speaking orders tried for the flow's schedule (k! up to k = 5)
PLAYED_OUT = 1e-12  # mass left waiting when a played flow counts as played out


@dataclass(frozen=True, eq=False)
class ScheduleObjective:
    """An agent's accuracy (gains normalised to [0, 1]) under the levels every protocol
    must meet: lambdas (floats: the witness's rational rays) and deltas."""

    lambdas: tuple[float, ...]
    deltas: tuple[float, ...]
    gain: np.ndarray  # inputs x outputs
    party: int
    worst: bool

    @property
    def parties(self) -> int:
        return len(self.lambdas)


@dataclass(frozen=True, eq=False)
class ScheduleSolution:
    """The best grid protocol of one schedule (0-based speakers): its float value and,
    per round, the float split at every state it reaches ({state: ((target, kappa),
    ...)}, stay first)."""

    schedule: tuple[int, ...]
    value: float
    splits: tuple[dict[int, tuple[tuple[int, float], ...]], ...] = ()

    @property
    def messages(self) -> tuple[int, ...]:
        return tuple(max((len(s) for s in rnd.values()), default=1) for rnd in self.splits)

    @property
    def transcripts(self) -> int:
        return math.prod(self.messages)


@dataclass
class ScheduleReport:
    best: ScheduleSolution | None
    tried: int = 0
    seconds: float = 0.0
    stopped: str = ""  # why the schedule stopped growing
    history: list[float] = field(default_factory=list)


def _state_digits(states: np.ndarray, k: int) -> np.ndarray:
    """(states, k) array of every state's rays, party 1 first."""
    powers = RAYS ** np.arange(k - 1, -1, -1)
    return (states[:, None] // powers[None, :]) % RAYS


Allowed = dict[tuple[int, int], tuple[int, ...]]  # (party, state) -> targets


def solve_schedule(obj: ScheduleObjective, schedule: Sequence[int], options: VerifyOptions,
                   time_limit: float | None = None, allowed: Allowed | None = None
                   ) -> ScheduleSolution | None:
    """The schedule LP (module docstring); None when it does not solve. `allowed` limits
    the targets at a corner state (party, state) to those listed (stay first; a corner
    state not listed only stays); a party that has not spoken may always split into every
    ray. A state whose speaker can only stay keeps its mass without a variable."""
    k = obj.parties
    rays = np.array([float_rays(lam) for lam in obj.lambdas])  # (k, RAYS, 2)
    reveals = [d > 0 for d in obj.deltas]
    b = LpBuilder()
    start_state = encode([UNSPOKEN] * k)
    # the mass arriving at each live state: (columns, coefficients); the start's is 1
    live: dict[int, list[int]] = {start_state: []}
    layers: list[list[tuple[int, tuple[int, ...], np.ndarray, list[int]]]] = []
    for j in schedule:
        stride = RAYS ** (k - 1 - j)
        nxt: dict[int, list[int]] = {}
        layer = []
        for s, incoming in live.items():
            v = (s // stride) % RAYS
            if v == UNSPOKEN or allowed is None:
                tgts = targets(v, reveals[j])
            else:
                tgts = allowed.get((j, s), (v,))
            if len(tgts) == 1:  # stays: its mass carries over
                nxt.setdefault(s, []).extend(incoming)
                continue
            y = b.add_cols(len(tgts))
            layer.append((s, tgts, y, incoming))
            for x in (0, 1):
                coefficients = rays[j, list(tgts), x]
                own = rays[j, v, x]
                if own == 0 and not coefficients.any():
                    continue
                fixed = own if not incoming and s == start_state else 0.0
                row = b.add_rows(1, fixed, fixed)
                b.add(row, y, coefficients)
                if incoming and own:
                    b.add(row, np.array(incoming), -own)
            for t, col in zip(tgts, y.tolist(), strict=True):
                nxt.setdefault(s + (t - v) * stride, []).append(col)
        layers.append(layer)
        live = nxt
    finals = np.array(sorted(live), dtype=np.int64)
    F = finals.size
    fin = _state_digits(finals, k)
    G = agent_label_gains(obj.gain, obj.party)
    n, L = G.shape
    T = np.ones((1, F))
    for jj in range(k):
        T = (T[:, None, :] * rays[jj][fin[:, jj]].T[None, :, :]).reshape(-1, F)
    theta = [b.add_cols(F, cost=0.0 if obj.worst else (T.T @ G[:, lab]) / n)
             for lab in range(L)]
    for idx, s in enumerate(finals.tolist()):
        fixed = 1.0 if not live[s] else 0.0  # the start, when nobody spoke
        row = b.add_rows(1, fixed, fixed)
        b.add(row, np.array([theta[lab][idx] for lab in range(L)]), 1.0)
        if live[s]:
            b.add(row, np.array(live[s]), -1.0)
    for i in range(k):
        if not reveals[i]:
            continue
        for reveal in (REVEAL_0, REVEAL_1):
            at = np.flatnonzero(fin[:, i] == reveal)
            if at.size == 0:
                continue
            H = np.ones((1, at.size))
            for jj in range(k):
                if jj != i:
                    H = (H[:, None, :] * rays[jj][fin[at, jj]].T[None, :, :]
                         ).reshape(-1, at.size)
            hs = b.add_rows(H.shape[0], -np.inf, obj.deltas[i])
            for lab in range(L):
                b.add_matrix(hs, theta[lab][at], H)
    if obj.worst:
        rows = b.add_rows(n, 0.0, np.inf)
        for lab in range(L):
            b.add_matrix(rows, theta[lab], T * G[:, lab][:, None])
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(rows, t, -1.0)
    lp = b.build(maximize=True, name="schedule", solver=SOLVER, drop_tiny=True)
    limit = options.time_limit if time_limit is None else time_limit
    sol = solve(lp, options.backend, time_limit=limit, threads=options.threads,
                feasibility_tol=1e-10)
    if not sol.optimal:
        return None
    x = np.clip(sol.x, 0.0, None)
    splits = []
    for layer in layers:
        rnd: dict[int, tuple[tuple[int, float], ...]] = {}
        for s, tgts, y, incoming in layer:
            mass = float(x[np.array(incoming)].sum()) if incoming else 1.0
            out = x[y]
            if mass <= 0 or not out.any():
                continue
            rnd[s] = tuple((t, float(kk)) for t, kk in zip(tgts, out / mass, strict=True)
                           if kk > USED)
        splits.append(rnd)
    return ScheduleSolution(tuple(schedule), float(sol.objective), tuple(splits))


def flow_allowed(sigma: np.ndarray, chords: Chords, counts: Sequence[int],
                 used: float = 1e-9) -> Allowed:
    """The targets the envelope flow uses at each corner state (stay first), by party, in
    the grid's numbering (theory/approx/grid.py: five symbols per party)."""
    k = len(counts)
    digits = state_digits(counts)
    out: dict[tuple[int, int], list[int]] = {}
    for c in np.flatnonzero(sigma > used).tolist():
        j, s = int(chords.party[c]), int(chords.source[c])
        code = encode(digits[s].tolist())
        v = int(digits[s][j])
        here = out.setdefault((j, code), [v])
        for t in (chords.target1[c], chords.target2[c]):
            ray = int(digits[int(t)][j])
            if ray not in here:
                here.append(ray)
    del k
    return {key: tuple(v) for key, v in out.items()}


def flow_sequences(theta: np.ndarray, sigma: np.ndarray, chords: Chords,
                   roots: np.ndarray, *, used: float = 1e-9, depth: int = 16
                   ) -> dict[tuple[int, ...], float]:
    """The speakers along the envelope LP's flow (envelope.py): from every root state,
    each chord leaving a state with its share of the state's mass, down to where the mass
    stops; per sequence of speakers, the mass that follows it. Paths longer than `depth`
    (a flow with a cycle) are cut there."""
    outgoing: dict[int, list[int]] = {}
    for c in np.flatnonzero(sigma > used).tolist():
        outgoing.setdefault(int(chords.source[c]), []).append(c)
    stop = theta.sum(axis=1)
    out: dict[tuple[int, ...], float] = {}
    todo: list[tuple[int, float, tuple[int, ...]]] = [(int(r), 1.0, ()) for r in roots]
    while todo:
        s, mass, seq = todo.pop()
        leaving = outgoing.get(s, [])
        total = stop[s] + sum(sigma[c] for c in leaving)
        if total <= 0 or mass < used:
            continue
        if seq and (stop[s] > used or len(seq) >= depth):
            out[seq] = out.get(seq, 0.0) + mass * stop[s] / total
        if len(seq) >= depth:
            continue
        for c in leaving:
            share = mass * sigma[c] / total
            for t, w in ((chords.target1[c], chords.weight1[c]),
                         (chords.target2[c], chords.weight2[c])):
                if w > 0:
                    todo.append((int(t), share * float(w), seq + (int(chords.party[c]),)))
    return out


def supersequence(sequences: dict[tuple[int, ...], float], order: Sequence[int], k: int
                  ) -> list[int]:
    """A common supersequence of `order` followed by each sequence (every party speaks
    once first, then the moves), greedily: the next speaker is the one that the most mass
    waits for; a speaker repeated at once is one message."""
    seqs = [(tuple(order) + seq, w) for seq, w in sequences.items()] or [(tuple(order), 1.0)]
    at = [0] * len(seqs)
    out: list[int] = []
    while True:
        score = np.zeros(k)
        for i, (seq, w) in enumerate(seqs):
            if at[i] < len(seq):
                score[seq[at[i]]] += w + 1e-12
        if not score.any():
            return out
        j = int(np.argmax(score))
        out.append(j)
        for i, (seq, _) in enumerate(seqs):
            while at[i] < len(seq) and seq[at[i]] == j:
                at[i] += 1


def flow_schedule(theta: np.ndarray, sigma: np.ndarray, chords: Chords, roots: np.ndarray,
                  k: int) -> list[int]:
    """The shortest supersequence over the first speaking orders (every order up to
    MAX_ORDERS of them) of the envelope flow's speaker sequences."""
    sequences = flow_sequences(theta, sigma, chords, roots)
    best: list[int] | None = None
    for n, order in enumerate(itertools.permutations(range(k))):
        if n >= MAX_ORDERS:
            break
        candidate = supersequence(sequences, order, k)
        if best is None or len(candidate) < len(best):
            best = candidate
    assert best is not None
    return best


def grow_schedule(obj: ScheduleObjective, options: VerifyOptions, *, stop_at: float,
                  deadline: float, max_transcripts: int = MAX_TRANSCRIPTS,
                  start: Sequence[int] = (), report: ScheduleReport | None = None
                  ) -> ScheduleReport:
    """The greedy schedule of the module docstring, from `start`."""
    began = time.perf_counter()
    report = report or ScheduleReport(None)
    schedule: list[int] = list(start)
    k = obj.parties
    while len(schedule) < MAX_ROUNDS:
        candidates = []
        for j in range(k):
            if schedule and schedule[-1] == j and k > 1:
                continue
            if time.perf_counter() > deadline and report.best is not None:
                break
            left = max(deadline - time.perf_counter(), 0.5)
            sol = solve_schedule(obj, schedule + [j], options, time_limit=left)
            report.tried += 1
            if sol is not None and sol.transcripts <= max_transcripts:
                candidates.append(sol)
        if not candidates:
            report.stopped = "transcripts"
            break
        best = max(candidates, key=lambda s: s.value)
        schedule = list(best.schedule)
        report.history.append(best.value)
        if report.best is None or best.value > report.best.value + 1e-13:
            report.best = best
        if best.value >= stop_at:
            report.stopped = "bound"
            break
        if time.perf_counter() > deadline:
            report.stopped = "deadline"
            break
    else:
        report.stopped = "rounds"
    report.seconds += time.perf_counter() - began
    return report


def _options(theta: np.ndarray, sigma: np.ndarray, chords: Chords, used: float
             ) -> dict[int, list[tuple[int, int, float]]]:
    """Per flow state, its outflow options (party or -1 for stopping, chord or -1, share
    of the state's outflow)."""
    out: dict[int, list[tuple[int, int, float]]] = {}
    stop = theta.sum(axis=1)
    for s in np.flatnonzero(stop > 0).tolist():
        out.setdefault(s, []).append((-1, -1, float(stop[s])))
    for c in np.flatnonzero(sigma > used).tolist():
        out.setdefault(int(chords.source[c]), []).append((int(chords.party[c]), c,
                                                          float(sigma[c])))
    for s, opts in out.items():
        total = sum(o[2] for o in opts)
        out[s] = [(j, c, w / total) for j, c, w in opts]
    return out


@dataclass(frozen=True, eq=False)
class PlayedFlow:
    """The envelope flow played as a grid protocol: its schedule, its splits per round
    (as ScheduleSolution.splits), the final states' masses, and the mass whose moves did
    not fit (0 when the flow is played out)."""

    schedule: tuple[int, ...]
    splits: tuple[dict[int, tuple[tuple[int, float], ...]], ...]
    finals: dict[int, float]
    left: float

    @property
    def messages(self) -> tuple[int, ...]:
        return tuple(max((len(s) for s in rnd.values()), default=1) for rnd in self.splits)


def flow_protocol(theta: np.ndarray, sigma: np.ndarray, chords: Chords,
                  counts: Sequence[int], order: Sequence[int], *,
                  schedule: Sequence[int] | None = None, used: float = 1e-9,
                  tiny: float = 1e-15, max_rounds: int = MAX_ROUNDS,
                  max_transcripts: int = MAX_TRANSCRIPTS) -> PlayedFlow:
    """The envelope's flow played along a schedule as a grid protocol (no LP): every
    party first splits its unspoken factor into its corners, (1, 1) = c0 + c1, in `order`;
    mass arriving at a state of the flow is shared among the flow's options there (stop,
    or a chord of some party) in the flow's proportions, and waits for that party's next
    round; in its round a party applies its chords, and again at the states they lead to
    (one message: the composed split of its ray; pieces below `tiny` stop). After the
    first rounds the speakers follow `schedule`, or, without one, the party that the most
    mass waits for speaks next. A round whose messages would take the protocol beyond
    `max_transcripts` is not played (the mass waiting then stops where it is)."""
    k = len(counts)
    digits = state_digits(counts)
    code_of = [encode(row.tolist()) for row in digits]
    flow_of = {c: s for s, c in enumerate(code_of)}
    options = _options(theta, sigma, chords, used)
    mine: dict[int, list[tuple[int, float]]] = {}  # (state, party) chords, shares
    for s, opts in options.items():
        for party, c, share in opts:
            if party >= 0:
                mine.setdefault(s * k + party, []).append((c, share))
    played: list[int] = []
    splits: list[dict[int, tuple[tuple[int, float], ...]]] = []
    size = 1
    # before the first rounds end: masses per state; after: per state, mass waiting for
    # each party (index k: stopped)
    before: dict[int, float] = {encode([UNSPOKEN] * k): 1.0}
    waiting: dict[int, np.ndarray] = {}

    def arrive(code: int, mass: float, j: int, ends: dict[int, float],
               queue: list[tuple[int, float]], arrived: dict[int, np.ndarray]) -> None:
        s = flow_of.get(code)
        opts = options.get(s, []) if s is not None else []
        if not opts or mass < tiny:
            arrived.setdefault(code, np.zeros(k + 1))[k] += mass
            ends[code] = ends.get(code, 0.0) + mass
            return
        rest = 0.0
        for party, c, share in opts:
            if party == j:
                queue.append((c, mass * share))
            else:
                arrived.setdefault(code, np.zeros(k + 1))[k if party < 0 else party] += \
                    mass * share
                rest += mass * share
        if rest:
            ends[code] = ends.get(code, 0.0) + rest

    def move(j: int, queue: list[tuple[int, float]], ends: dict[int, float],
             arrived: dict[int, np.ndarray]) -> None:
        while queue:
            c, mass = queue.pop()
            for t, w in ((chords.target1[c], chords.weight1[c]),
                         (chords.target2[c], chords.weight2[c])):
                if w > 0:
                    arrive(code_of[int(t)], mass * float(w), j, ends, queue, arrived)

    def play(j: int) -> tuple[dict, dict[int, float], dict[int, np.ndarray]]:
        """One round of party j, on copies: (splits, masses before, waiting after)."""
        rnd: dict[int, tuple[tuple[int, float], ...]] = {}
        arrived: dict[int, np.ndarray] = {}
        stride = RAYS ** (k - 1 - j)
        if before:
            last = all(p in played for p in range(k) if p != j)
            nxt: dict[int, float] = {}
            for code, mass in before.items():
                ends: dict[int, float] = {}
                for corner in (0, 1):
                    target = code + (corner - UNSPOKEN) * stride
                    if last:
                        queue: list[tuple[int, float]] = []
                        arrive(target, mass, j, ends, queue, arrived)
                        move(j, queue, ends, arrived)
                    else:
                        nxt[target] = nxt.get(target, 0.0) + mass
                        ends[target] = ends.get(target, 0.0) + mass
                rnd[code] = _split_of(code, mass, ends, j, k)
            return rnd, ({} if last else nxt), arrived
        after = {code: vec.copy() for code, vec in waiting.items()}
        for code, vec in after.items():
            wait = vec[j]
            if wait <= 0:
                continue
            total = float(vec.sum())
            vec[j] = 0.0
            ends = {code: total - wait}
            chords_here = mine[flow_of[code] * k + j]
            norm = sum(share for _, share in chords_here)
            queue = [(c, wait * share / norm) for c, share in chords_here]
            move(j, queue, ends, arrived)
            rnd[code] = _split_of(code, total, ends, j, k)
        for code, vec in arrived.items():
            after[code] = after[code] + vec if code in after else vec
        return rnd, {}, after

    planned = list(order) + list(schedule or ())
    while len(played) < max_rounds:
        if len(played) < len(planned):
            j = planned[len(played)]
        elif schedule is not None or before:
            break
        else:
            load = np.zeros(k)
            for vec in waiting.values():
                load += vec[:k]
            if played:
                load[played[-1]] = 0.0
            if load.max() <= tiny:
                break
            j = int(np.argmax(load))
        rnd, nxt, after = play(j)
        messages = max((len(v) for v in rnd.values()), default=1)
        if size * messages > max_transcripts:
            break
        size *= messages
        played.append(j)
        splits.append(rnd)
        if before:
            before = nxt
            if not before:
                waiting = after
        else:
            waiting = after
    if before:  # not every party spoke: the masses stop where they are
        finals = dict(before)
        left = 0.0
    else:
        finals = {code: float(v.sum()) for code, v in waiting.items() if v.sum() > 0}
        left = float(sum(v[:k].sum() for v in waiting.values()))
    return PlayedFlow(tuple(played), tuple(splits), finals, left)


def _split_of(code: int, mass: float, ends: dict[int, float], j: int, k: int
              ) -> tuple[tuple[int, float], ...]:
    """The split of state `code`'s mass by party j, from where its pieces ended (stay
    first): kappa_t = the mass that ended with party j at ray t / the state's mass."""
    stride = RAYS ** (k - 1 - j)
    v = (code // stride) % RAYS
    by_ray: dict[int, float] = {}
    for end, m in ends.items():
        ray = (end // stride) % RAYS
        by_ray[ray] = by_ray.get(ray, 0.0) + m
    order = [v] + sorted(t for t in by_ray if t != v)
    return tuple((t, by_ray[t] / mass) for t in order if by_ray.get(t, 0.0) / mass > USED)


def finals_value(obj: ScheduleObjective, finals: dict[int, float], options: VerifyOptions
                 ) -> float:
    """The agent's float accuracy under its optimal rule on a grid protocol's final states
    (their columns mass(s) T_s are the protocol's, merged by state)."""
    k = obj.parties
    rays = np.array([float_rays(lam) for lam in obj.lambdas])
    codes = np.array(sorted(finals), dtype=np.int64)
    fin = _state_digits(codes, k)
    P = np.ones((1, codes.size))
    for j in range(k):
        P = (P[:, None, :] * rays[j][fin[:, j]].T[None, :, :]).reshape(-1, codes.size)
    P = P * np.array([finals[c] for c in codes.tolist()])[None, :]
    tr = Transcripts((2,) * k, (codes.size,), P, 1, False)
    value = protocol_value(tr, obj.gain, None, obj.party, obj.worst, options)
    return float(value.value) if value.ok else -np.inf


def play_flow(theta: np.ndarray, sigma: np.ndarray, chords: Chords, counts: Sequence[int],
              obj: ScheduleObjective, options: VerifyOptions, *, deadline: float,
              max_transcripts: int = MAX_TRANSCRIPTS) -> ScheduleSolution | None:
    """The envelope flow played (`flow_protocol`, speakers chosen by the waiting mass)
    after every first speaking order (up to MAX_ORDERS of them, while time lasts): the
    played-out protocol with the fewest transcripts, or, when none is played out within
    `max_transcripts`, the best value among the three that leave the least mass
    unmoved."""
    k = len(counts)
    plays: list[PlayedFlow] = []
    for n, order in enumerate(itertools.permutations(range(k))):
        if n >= MAX_ORDERS or (plays and time.perf_counter() > deadline):
            break
        plays.append(flow_protocol(theta, sigma, chords, counts, order,
                                   max_transcripts=max_transcripts))
    if not plays:
        return None
    done = [p for p in plays if p.left <= PLAYED_OUT]
    if done:
        pick = [min(done, key=lambda p: math.prod(p.messages))]
    else:
        pick = sorted(plays, key=lambda p: p.left)[:3]
    best = None
    for p in pick:
        sol = ScheduleSolution(p.schedule, finals_value(obj, p.finals, options), p.splits)
        if best is None or sol.value > best.value:
            best = sol
    return best


def find_protocol(obj: ScheduleObjective, options: VerifyOptions, *, stop_at: float,
                  deadline: float, flow: tuple[np.ndarray, np.ndarray, Chords,
                                               tuple[int, ...]] | None = None,
                  max_transcripts: int = MAX_TRANSCRIPTS, greedy: bool = True,
                  flow_lp: bool = True) -> ScheduleReport:
    """The best grid protocol found before `deadline`, from these tries in turn until
    one reaches `stop_at`:

    1. the envelope flow (`flow`: theta, sigma, chords, ray counts) played as a protocol
       (`play_flow`, no LP): its value is the bound when it is played out;
    2. the schedule LP of one round per party, in the played flow's first order: the
       best protocol in which each party speaks once (few transcripts: 4^k at most);
    3. with `flow_lp`, the schedule LP on the played flow's schedule with the flow's own
       moves (`flow_allowed`), rounds cut from its end until its protocol fits;
    4. with `greedy`, schedule LPs with rounds added greedily (every move allowed)."""
    report = ScheduleReport(None)
    began = time.perf_counter()

    def offer(sol: ScheduleSolution | None) -> bool:
        """Keep `sol` when it is better; whether the search may stop."""
        report.tried += 1
        if sol is not None and sol.transcripts <= max_transcripts and (
                report.best is None or sol.value > report.best.value):
            report.best = sol
            report.history.append(sol.value)
        done = report.best is not None and report.best.value >= stop_at
        if done:
            report.stopped = "bound"
        return done or time.perf_counter() > deadline

    def left() -> float:
        return max(deadline - time.perf_counter(), 0.5)

    order = list(range(obj.parties))
    played = None
    if flow is not None:
        played = play_flow(*flow, obj, options, deadline=deadline,
                           max_transcripts=max_transcripts)
        if played is not None:
            order = list(dict.fromkeys(played.schedule))[:obj.parties] or order
        if offer(played):
            return _timed(report, began)
    if offer(solve_schedule(obj, order, options, time_limit=left())):
        return _timed(report, began)
    if flow is not None and played is not None and flow_lp:
        allowed = flow_allowed(flow[1], flow[2], flow[3])
        cut = list(played.schedule)
        while len(cut) > obj.parties:
            sol = solve_schedule(obj, cut, options, allowed=allowed, time_limit=left())
            if sol is None or sol.transcripts <= max_transcripts:
                if offer(sol):
                    return _timed(report, began)
                break
            cut = cut[:-1]
            if time.perf_counter() > deadline:
                return _timed(report, began)
    if greedy:
        best = report.best
        report = grow_schedule(obj, options, stop_at=stop_at, deadline=deadline,
                               max_transcripts=max_transcripts, report=report)
        if best is not None and (report.best is None or best.value > report.best.value):
            report.best = best
    return _timed(report, began)


def _timed(report: ScheduleReport, began: float) -> ScheduleReport:
    report.seconds = time.perf_counter() - began
    if not report.stopped:
        report.stopped = "deadline"
    return report


__all__ = ["ScheduleObjective", "ScheduleSolution", "find_protocol", "flow_allowed", "flow_protocol", "flow_schedule",
           "grow_schedule", "solve_schedule"]
