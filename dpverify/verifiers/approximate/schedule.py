"""The schedule LP: for a schedule of speakers, the best grid protocol (theory/approx/grid.py)
under (epsilon_i, delta_i)-DP is one LP (docs/theory.md, section 7.11).

For speakers j_1, ..., j_R, a variable y[r, s, t] >= 0 per round r, state s the round can
reach and target t of the speaker's ray v = s_j (grid.targets, or fewer: `allowed`): the
mass that leaves s for s with party j at t. Its rows:

    sum_t y[r, s, t] t[x] = v[x] (mass arriving at s)          x = 0, 1     (the split)
    mass arriving in round 0: 1 at the all-unspoken state

and after the last round theta[s, l] >= 0, sum_l theta[s, l] = the mass arriving at s, with
the hockey-stick rows and the objective of the envelope LP on theta (the columns of the
final states, with the unspoken (1, 1) among the rays). A state whose speaker can only stay
keeps its mass without a variable. Any solution is a grid protocol with that schedule and
that accuracy: in round r at state s the speaker sends one message per target, kappa_t =
y[r, s, t] / mass(s). Every grid protocol's final states are a feasible point of the
envelope LP, so the schedule LP's optimum is at most the envelope bound.

Everything here is in floats, in normalised gains; witness.py makes a protocol exact and
values it again from its file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpverify.lp.builder import LpBuilder
from dpverify.records import record
from dpverify.theory.approx.grid import RAYS, UNSPOKEN, encode, float_rays, targets
from dpverify.theory.approx.rays import agent_label_gains
from dpverify.theory.approx.rr import REVEAL_0, REVEAL_1
from dpverify.theory.protocols.transcripts import Transcripts
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.solving import Solver

USED = 1e-13  # a target whose kappa is below this is not used (solver noise)
MIN_MASS = 1e-12  # a state reached with less mass stays (its split is solver noise)
MAX_TRANSCRIPTS = 1 << 15  # leaves room for the witness's repair coin (a doubling)
SOLVER = "ipm"  # measured: 2-8x faster than simplex on these LPs at k = 4

Split = tuple[tuple[int, float], ...]  # (target, kappa) pairs, stay first
Allowed = dict[tuple[int, int], tuple[int, ...]]  # (party, state) -> targets, stay first


@record(eq=False)
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

    def rays(self) -> np.ndarray:
        """(k, RAYS, 2): every party's five rays (grid.float_rays)."""
        return np.array([float_rays(lam) for lam in self.lambdas])


@record(eq=False)
class ScheduleSolution:
    """A grid protocol in floats: its schedule (0-based speakers), its value and, per
    round, the split at every state it reaches ({state: split}; a state not listed
    stays)."""

    schedule: tuple[int, ...]
    value: float
    splits: tuple[dict[int, Split], ...] = ()

    @property
    def messages(self) -> tuple[int, ...]:
        return tuple(max((len(s) for s in rnd.values()), default=1) for rnd in self.splits)

    @property
    def transcripts(self) -> int:
        return math.prod(self.messages)


def state_rays(states: np.ndarray, k: int) -> np.ndarray:
    """(states, k) array of every state's rays, party 1 first."""
    powers = RAYS ** np.arange(k - 1, -1, -1)
    return (states[:, None] // powers[None, :]) % RAYS


def final_columns(states: np.ndarray, rays: np.ndarray) -> np.ndarray:
    """T_s[x] (inputs x states) of grid states, the unspoken ray (1, 1) included."""
    k = rays.shape[0]
    fin = state_rays(states, k)
    T = np.ones((1, states.size))
    for j in range(k):
        T = (T[:, None, :] * rays[j][fin[:, j]].T[None, :, :]).reshape(-1, states.size)
    return T


class _ScheduleLp:
    """The LP of the module docstring, built round by round."""

    def __init__(self, obj: ScheduleObjective, allowed: Allowed | None):
        self.obj, self.allowed = obj, allowed
        self.rays = obj.rays()
        self.k = obj.parties
        self.b = LpBuilder()
        self.start = encode([UNSPOKEN] * self.k)
        # the mass arriving at each live state: the y columns into it (none: the start)
        self.live: dict[int, list[int]] = {self.start: []}
        self.layers: list[list[tuple[int, tuple[int, ...], np.ndarray, list[int]]]] = []

    def targets_at(self, j: int, s: int, v: int) -> tuple[int, ...]:
        if v == UNSPOKEN or self.allowed is None:
            return targets(v, self.obj.deltas[j] > 0)
        return self.allowed.get((j, s), (v,))

    def add_round(self, j: int) -> None:
        """Party j's round: a y column per target at every state that can move, and its
        split rows, numbered state by state (the rows in one batch, lp/builder.RowBatch:
        the search's LPs have thousands of states)."""
        stride = RAYS ** (self.k - 1 - j)
        rays = self.rays[j].tolist()  # rays[t] = (t[0], t[1])
        nxt: dict[int, list[int]] = {}
        layer = []
        rows = self.b.batch()
        col = self.b.num_cols
        for s, incoming in self.live.items():
            v = (s // stride) % RAYS
            tgts = self.targets_at(j, s, v)
            if len(tgts) == 1:  # stays: its mass carries over
                nxt.setdefault(s, []).extend(incoming)
                continue
            y = list(range(col, col + len(tgts)))
            col += len(tgts)
            layer.append((s, tgts, np.array(y), incoming))
            start = not incoming and s == self.start
            for x in (0, 1):  # sum_t y_t t[x] = v[x] (the mass arriving)
                coefficients = [rays[t][x] for t in tgts]
                own = rays[v][x]
                if own == 0 and not any(coefficients):
                    continue
                fixed = own if start else 0.0
                row = rows.row(fixed, fixed)
                rows.add(row, y, coefficients)
                if incoming and own:
                    rows.add(row, incoming, [-own] * len(incoming))
            for t, c in zip(tgts, y, strict=True):
                nxt.setdefault(s + (t - v) * stride, []).append(c)
        self.b.add_cols(col - self.b.num_cols)
        rows.close()
        self.layers.append(layer)
        self.live = nxt

    def finish(self) -> tuple[LpBuilder, list[np.ndarray]]:
        """The labels of the final states, the hockey-stick rows and the objective."""
        b, obj = self.b, self.obj
        finals = np.array(sorted(self.live), dtype=np.int64)
        G = agent_label_gains(obj.gain, obj.party)
        n, L = G.shape
        T = final_columns(finals, self.rays)
        theta = [b.add_cols(finals.size, cost=0.0 if obj.worst else (T.T @ G[:, lab]) / n)
                 for lab in range(L)]
        labels = np.stack(theta, axis=1).tolist()  # labels[idx]: theta[lab][idx] by lab
        rows = b.batch()
        for idx, s in enumerate(finals.tolist()):
            arriving = self.live[s]
            fixed = 0.0 if arriving else 1.0  # the start, when nobody spoke
            row = rows.row(fixed, fixed)
            rows.add(row, labels[idx], [1.0] * L)
            if arriving:
                rows.add(row, arriving, [-1.0] * len(arriving))
        rows.close()
        self.hockey_rows(finals, theta)
        if obj.worst:
            worst_rows = b.add_rows(n, 0.0, np.inf)
            for lab in range(L):
                b.add_matrix(worst_rows, theta[lab], T * G[:, lab][:, None])
            t = b.add_cols(1, cost=1.0, lo=-np.inf)
            b.add(worst_rows, t, -1.0)
        return b, theta

    def hockey_rows(self, finals: np.ndarray, theta: list[np.ndarray]) -> None:
        """Party i's reveal mass at each x_-i, at most delta_i (rays.py's rows)."""
        fin = state_rays(finals, self.k)
        for i in range(self.k):
            if self.obj.deltas[i] <= 0:
                continue
            for reveal in (REVEAL_0, REVEAL_1):
                at = np.flatnonzero(fin[:, i] == reveal)
                if at.size == 0:
                    continue
                H = np.ones((1, at.size))
                for jj in range(self.k):
                    if jj != i:
                        H = (H[:, None, :] * self.rays[jj][fin[at, jj]].T[None, :, :]
                             ).reshape(-1, at.size)
                rows = self.b.add_rows(H.shape[0], -np.inf, self.obj.deltas[i])
                for block in theta:
                    self.b.add_matrix(rows, block[at], H)

    def splits(self, x: np.ndarray) -> tuple[dict[int, Split], ...]:
        """The solution's splits per round (module docstring)."""
        out = []
        for layer in self.layers:
            rnd: dict[int, Split] = {}
            for s, tgts, y, incoming in layer:
                mass = float(x[np.array(incoming)].sum()) if incoming else 1.0
                moved = x[y]
                if mass > MIN_MASS and moved.any():
                    rnd[s] = tuple((t, float(kk)) for t, kk in
                                   zip(tgts, moved / mass, strict=True) if kk > USED)
            out.append(rnd)
        return tuple(out)


def solve_schedule(obj: ScheduleObjective, schedule: Sequence[int], solver: Solver,
                   allowed: Allowed | None = None) -> ScheduleSolution | None:
    """The schedule LP (module docstring), solved by `solver` (the run's, within the
    search's budget: verifiers/solving.py); None when it does not solve. `allowed` limits
    the targets at a corner state (party, state) to those listed (a corner state not
    listed only stays); a party that has not spoken may always split into every ray."""
    lp = _ScheduleLp(obj, allowed)
    for j in schedule:
        lp.add_round(j)
    b, _ = lp.finish()
    sol = solver.tight(1e-10)(b.build(maximize=True, name="schedule", solver=SOLVER,
                                      drop_tiny=True))
    if not sol.optimal:
        return None
    return ScheduleSolution(tuple(schedule), float(sol.objective),
                            lp.splits(np.clip(sol.x, 0.0, None)))


def finals_value(obj: ScheduleObjective, finals: dict[int, float], options: VerifyOptions
                 ) -> float:
    """The agent's float accuracy under its optimal rule on a grid protocol's final states
    (their columns mass(s) T_s are the protocol's, merged by state)."""
    codes = np.array(sorted(finals), dtype=np.int64)
    P = final_columns(codes, obj.rays()) * np.array([finals[c] for c in codes.tolist()])
    tr = Transcripts((2,) * obj.parties, (codes.size,), P, 1, False)
    value = protocol_value(tr, obj.gain, None, obj.party, obj.worst, options)
    return float(value.value) if value.ok else -np.inf


__all__ = ["MAX_TRANSCRIPTS", "ScheduleObjective", "ScheduleSolution", "finals_value",
           "solve_schedule"]
