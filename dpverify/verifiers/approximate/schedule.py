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
from dpverify.theory.approx.envelope import Chords
from dpverify.theory.approx.grid import RAYS, UNSPOKEN, encode, float_rays, targets
from dpverify.theory.approx.rays import agent_label_gains
from dpverify.theory.approx.rr import REVEAL_0, REVEAL_1
from dpverify.verifiers.options import VerifyOptions

USED = 1e-13  # a target whose kappa is below this is not used (solver noise)
MAX_TRANSCRIPTS = 1 << 15  # leaves room for the witness's repair coin (a doubling)
MAX_ROUNDS = 24
MAX_ORDERS = 120  # first speaking orders tried for the flow's schedule (k! up to k = 5)


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


def solve_schedule(obj: ScheduleObjective, schedule: Sequence[int], options: VerifyOptions,
                   time_limit: float | None = None) -> ScheduleSolution | None:
    """The schedule LP (module docstring); None when it does not solve."""
    k = obj.parties
    rays = np.array([float_rays(lam) for lam in obj.lambdas])  # (k, RAYS, 2)
    reveals = [d > 0 for d in obj.deltas]
    b = LpBuilder()
    live = np.array([encode([UNSPOKEN] * k)], dtype=np.int64)
    into: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]  # per live state: y columns in
    arrive_dest = np.zeros(0, dtype=np.int64)  # (y columns, their destination index)
    arrive_cols = np.zeros(0, dtype=np.int64)
    layers = []
    for r, j in enumerate(schedule):
        stride = RAYS ** (k - 1 - j)
        v = (live // stride) % RAYS
        dest_codes, dest_cols = [], []
        layer = []
        for ray in np.unique(v).tolist():
            at = np.flatnonzero(v == ray)
            tgts = targets(ray, reveals[j])
            T = len(tgts)
            y = b.add_cols(at.size * T).reshape(at.size, T)
            layer.append((live[at], tgts, y, at))
            for x in (0, 1):
                coefficients = rays[j, list(tgts), x]
                own = rays[j, ray, x]
                if own == 0 and not coefficients.any():
                    continue
                rows = b.add_rows(at.size, own if r == 0 else 0.0, own if r == 0 else 0.0)
                b.add(rows[:, None], y, coefficients[None, :])
                if r > 0 and own:
                    pick = np.isin(arrive_dest, at)
                    where = np.searchsorted(at, arrive_dest[pick])
                    b.add(rows[where], arrive_cols[pick], -own)
            for n, t in enumerate(tgts):
                dest_codes.append(live[at] + (t - ray) * stride)
                dest_cols.append(y[:, n])
        layers.append(layer)
        codes = np.concatenate(dest_codes)
        live, inverse = np.unique(codes, return_inverse=True)
        arrive_dest, arrive_cols = inverse.ravel(), np.concatenate(dest_cols)
    finals = live
    F = finals.size
    fin = _state_digits(finals, k)
    G = agent_label_gains(obj.gain, obj.party)
    n, L = G.shape
    T = np.ones((1, F))
    for jj in range(k):
        T = (T[:, None, :] * rays[jj][fin[:, jj]].T[None, :, :]).reshape(-1, F)
    theta = [b.add_cols(F, cost=0.0 if obj.worst else (T.T @ G[:, lab]) / n)
             for lab in range(L)]
    rows = b.add_rows(F, 0.0, 0.0)
    for lab in range(L):
        b.add(rows, theta[lab], 1.0)
    if schedule:
        b.add(rows[arrive_dest], arrive_cols, -1.0)
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
    lp = b.build(maximize=True, name="schedule", solver="ipm", drop_tiny=True)
    limit = options.time_limit if time_limit is None else time_limit
    sol = solve(lp, options.backend, time_limit=limit, threads=options.threads,
                feasibility_tol=1e-10)
    if not sol.optimal:
        return None
    x = np.clip(sol.x, 0.0, None)
    splits = []
    arrive_mass: dict[int, float] = {}
    for r, layer in enumerate(layers):
        rnd: dict[int, tuple[tuple[int, float], ...]] = {}
        for states, tgts, y, _ in layer:
            out = x[y]  # (states, targets)
            for s, row in zip(states.tolist(), out, strict=True):
                mass = 1.0 if r == 0 else arrive_mass.get(s, 0.0)
                if mass <= 0 or not row.any():
                    continue
                rnd[s] = tuple((t, float(kk)) for t, kk in zip(tgts, row / mass,
                                                                 strict=True) if kk > USED)
        splits.append(rnd)
        arrive_mass = {}
        j = schedule[r]
        stride = RAYS ** (k - 1 - j)
        for states, tgts, y, _ in layer:
            v = (states // stride) % RAYS
            for n, t in enumerate(tgts):
                for s2, m in zip((states + (t - v) * stride).tolist(), x[y[:, n]].tolist(),
                                 strict=True):
                    if m > 0:
                        arrive_mass[s2] = arrive_mass.get(s2, 0.0) + m
    return ScheduleSolution(tuple(schedule), float(sol.objective), tuple(splits))


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


def find_protocol(obj: ScheduleObjective, options: VerifyOptions, *, stop_at: float,
                  deadline: float, flow: tuple[np.ndarray, np.ndarray, Chords, np.ndarray]
                  | None = None, max_transcripts: int = MAX_TRANSCRIPTS) -> ScheduleReport:
    """The best grid protocol found before `deadline`: first the schedule of the envelope
    flow (`flow`: theta, sigma, chords, roots), cut back from its end while the protocol
    has too many transcripts; then rounds added greedily while it stays below `stop_at`."""
    began = time.perf_counter()
    report = ScheduleReport(None)
    schedule: list[int] = []
    if flow is not None:
        schedule = flow_schedule(*flow, obj.parties)
        while schedule:
            left = max(deadline - time.perf_counter(), 0.5)
            sol = solve_schedule(obj, schedule, options, time_limit=left)
            report.tried += 1
            if sol is not None and sol.transcripts <= max_transcripts:
                report.best = sol
                report.history.append(sol.value)
                break
            if sol is not None and time.perf_counter() < deadline:
                # keep the rounds whose messages fit
                keep, size = 0, 1
                for m in sol.messages:
                    if size * m > max_transcripts:
                        break
                    size, keep = size * m, keep + 1
                schedule = schedule[:min(keep, len(schedule) - 1)]
            else:
                schedule = schedule[:-1]
            if time.perf_counter() > deadline:
                break
    report.seconds = time.perf_counter() - began
    if report.best is not None and report.best.value >= stop_at:
        report.stopped = "bound"
        return report
    if time.perf_counter() > deadline and report.best is not None:
        report.stopped = "deadline"
        return report
    return grow_schedule(obj, options, stop_at=stop_at, deadline=deadline,
                         max_transcripts=max_transcripts,
                         start=report.best.schedule if report.best else (), report=report)


__all__ = ["ScheduleObjective", "ScheduleSolution", "find_protocol", "flow_schedule",
           "grow_schedule", "solve_schedule"]
