"""The search for the best interactive protocol under (epsilon_i, delta_i)-DP (docs/theory.md,
section 7.11): grid protocols, from the envelope bound's own flow first, then from schedule
LPs (schedule.py). Tries in turn, until one reaches `stop_at` (the proved bound, less a
quarter of the tolerance) or `deadline` passes:

1. the envelope flow played as a protocol (flow.py, no LP): its value is the bound when it
   is played out within the protocol files' transcripts;
2. the schedule LP of one round per party, in the played flow's first order: the best
   protocol in which each party speaks once (at most 4^k transcripts);
3. with `flow_lp`, the schedule LP on the played flow's schedule with the flow's own moves
   (flow.flow_allowed), cut to the rounds whose messages fit while its protocol has too
   many transcripts;
4. with `greedy`, schedule LPs with rounds added one at a time (every move allowed): each
   candidate speaker (not the one who just spoke) is tried and the best kept, while the
   protocol fits `max_transcripts` (each round's message count is the most targets any
   state uses in it).

Everything here is in floats, in normalised gains; witness.py makes the best protocol exact
and values it again from its file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from dpverify import clock
from dpverify.verifiers.approximate.flow import Flow, flow_allowed, play_flow
from dpverify.verifiers.approximate.schedule import (
    MAX_TRANSCRIPTS,
    ScheduleObjective,
    ScheduleSolution,
    solve_schedule,
)
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.solving import Solver

MAX_ROUNDS = 24


@dataclass
class SearchReport:
    """The best protocol found, how many candidates were valued, why the search stopped."""

    best: ScheduleSolution | None = None
    tried: int = 0
    seconds: float = 0.0
    stopped: str = ""
    history: list[float] = field(default_factory=list)


class _Search:
    def __init__(self, obj: ScheduleObjective, options: VerifyOptions, stop_at: float,
                 deadline: float, max_transcripts: int):
        self.obj, self.options = obj, options
        self.stop_at, self.deadline, self.max_transcripts = stop_at, deadline, max_transcripts
        self.report = SearchReport()

    def left(self) -> Solver:
        """The run's solver, each LP within the budget's time left (at least 0.5 s)."""
        return self.options.solver().at_most(max(self.deadline - time.perf_counter(), 0.5))

    def late(self) -> bool:
        """Whether the budget is spent (TimedOut when the run's own time is up)."""
        clock.check()
        return time.perf_counter() > self.deadline

    def offer(self, sol: ScheduleSolution | None) -> bool:
        """Keep `sol` when it fits and is better; whether the search may stop."""
        report = self.report
        report.tried += 1
        if sol is not None and sol.transcripts <= self.max_transcripts and (
                report.best is None or sol.value > report.best.value):
            report.best = sol
            report.history.append(sol.value)
        if report.best is not None and report.best.value >= self.stop_at:
            report.stopped = "bound"
            return True
        return self.late()

    def flow_lp(self, flow: Flow, schedule: Sequence[int]) -> bool:
        """Try 3 of the module docstring."""
        allowed = flow_allowed(flow)
        cut = list(schedule)
        while len(cut) > self.obj.parties and not self.late():
            sol = solve_schedule(self.obj, cut, self.left(), allowed=allowed)
            if sol is None or sol.transcripts <= self.max_transcripts:
                return self.offer(sol)
            keep, size = 0, 1  # the leading rounds whose messages fit
            for m in sol.messages:
                if size * m > self.max_transcripts:
                    break
                size, keep = size * m, keep + 1
            cut = cut[:min(keep, len(cut) - 1)]
        return self.late()

    def greedy(self, start: Sequence[int]) -> None:
        """Try 4 of the module docstring, from `start`."""
        schedule = list(start)
        k = self.obj.parties
        while len(schedule) < MAX_ROUNDS and not self.late():
            candidates = []
            for j in range(k):
                if k > 1 and schedule and schedule[-1] == j:
                    continue
                sol = solve_schedule(self.obj, schedule + [j], self.left())
                self.report.tried += 1
                if sol is not None and sol.transcripts <= self.max_transcripts:
                    candidates.append(sol)
                if self.late():
                    break
            if not candidates:
                self.report.stopped = "transcripts"
                return
            best = max(candidates, key=lambda s: s.value)
            schedule = list(best.schedule)
            if self.offer(best):
                return
        self.report.stopped = self.report.stopped or "rounds"


def find_protocol(obj: ScheduleObjective, options: VerifyOptions, *, stop_at: float,
                  deadline: float, flow: Flow | None = None,
                  max_transcripts: int = MAX_TRANSCRIPTS, greedy: bool = True,
                  flow_lp: bool = True) -> SearchReport:
    """The best grid protocol found before `deadline` (module docstring)."""
    began = time.perf_counter()
    search = _Search(obj, options, stop_at, deadline, max_transcripts)
    order = list(range(obj.parties))
    played = None
    done = False
    if flow is not None:
        played = play_flow(flow, obj, options, deadline=deadline,
                           max_transcripts=max_transcripts)
        if played is not None:
            order = list(dict.fromkeys(played.schedule))[:obj.parties] or order
        done = search.offer(played)
    if not done:
        done = search.offer(solve_schedule(obj, order, search.left()))
    if not done and flow is not None and played is not None and flow_lp:
        done = search.flow_lp(flow, played.schedule)
    if not done and greedy:
        search.greedy(())
    report = search.report
    report.seconds = time.perf_counter() - began
    report.stopped = report.stopped or "deadline"
    return report


__all__ = ["SearchReport", "find_protocol"]
