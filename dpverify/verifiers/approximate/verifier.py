"""One agent and accuracy under (epsilon_i, delta_i)-DP (issues 20 and 27; docs/theory.md,
"Approximate privacy"): three exact numbers, in gains normalised to [0, 1] so that the
tolerance is relative to their range, and a verdict.

* U, a proved upper bound over every interactive (epsilon_i, delta_i)-DP protocol: the
  envelope LP, its duals made exact at the upper rational brackets of the levels
  (envelope.py; docs/theory.md 7.10). It is the interactive optimum itself, reached in the
  limit by grid protocols;
* R, the best non-interactive value: the product of RR(epsilon_i, delta_i) with the
  optimal rule, exactly (R_lo at the lower brackets, an explicit private protocol;
  R_hi >= its value at the true levels; equal for rational levels);
* B, the best interactive protocol found (schedule.py: a grid protocol, one LP per
  schedule), made exactly private, written as a protocol file and valued again from that
  file alone (witness.py); B = R_lo when nothing beats RR.

Verdicts (never guessed):

    R_lo > U or B > U     error: a bug (both are feasible points of the LP)
    U - R_lo <= tol       optimal: RR(epsilon, delta) attains the bound
    B - R_hi > tol        interaction-helps: the witness beats every non-interactive
                          protocol; *closed* when moreover U - B <= tol: then B is the
                          interactive optimum within tol, named in the reason
    otherwise             open: the optimum lies in [B, U]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpverify.policy import (
    FLOW_LP_PARTIES,
    GREEDY_PARTIES,
    SEARCH_SECONDS,
    SEARCH_SECONDS_MORE,
)
from dpverify.reasons import ReasonCode
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.hockey import DeltaBracket
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.approximate.certify import delta_proof
from dpverify.verifiers.approximate.envelope import (
    FloatEnvelope,
    envelope_nonzeros,
    proved_envelope,
)
from dpverify.verifiers.approximate.flow import Flow
from dpverify.verifiers.approximate.noninteractive import noninteractive_value
from dpverify.verifiers.approximate.result import ApproxResult
from dpverify.verifiers.approximate.schedule import ScheduleObjective, ScheduleSolution
from dpverify.verifiers.approximate.search import SearchReport, find_protocol
from dpverify.verifiers.approximate.witness import (
    check_witness,
    exact_grid,
    repair_weight,
    witness_level,
    witness_name,
    witness_text,
    write_witness,
)
from dpverify.verifiers.options import VerifyOptions, check_limit
from dpverify.verifiers.result import Verdict


def search_seconds_for(parties: int) -> float:
    """The search's default budget (seconds) for one agent and accuracy."""
    return SEARCH_SECONDS.get(max(parties, 3), SEARCH_SECONDS_MORE)


@dataclass
class ApproxNumbers:
    """The exact numbers of one agent and accuracy (normalised gains), as they are found."""

    bound: Fraction | None = None
    rr_low: Fraction | None = None
    rr_high: Fraction | None = None
    best: Fraction | None = None
    witness: str | None = None  # the text
    witness_path: str | None = None
    witness_deltas: tuple[DeltaBracket, ...] = ()
    rounds: int = 0  # the witness's rounds
    notes: tuple[str, ...] = ()

    def closed(self, tol: float) -> bool:
        """Whether the bracket [B, U] is closed within tol (exact numbers)."""
        return self.bound is not None and self.best is not None and \
            self.bound - self.best <= Fraction(tol)


def decide(nums: ApproxNumbers, tol: float, units: Units) -> tuple[Verdict, str]:
    """The verdict of the module docstring from the exact numbers (normalised)."""
    verdict, reason, _ = decided(nums, tol, units)
    return verdict, reason


def decided(nums: ApproxNumbers, tol: float, units: Units
            ) -> tuple[Verdict, str, ReasonCode | None]:
    """`decide`, with the code of its reason (dpverify/reasons.py)."""
    def shown(v: Fraction) -> str:
        return f"{float(units.lo + units.span * v):.12g}"

    U, R, B = nums.bound, nums.rr_low, nums.best
    if R is None or nums.rr_high is None or B is None:
        return (Verdict.ERROR, "the non-interactive value could not be computed exactly",
                ReasonCode.NOT_EXACT)
    if U is not None and (R > U or B > U):
        which, value = ("RR(epsilon, delta)", R) if R > U else ("the witness", B)
        return Verdict.ERROR, (f"{which} reaches {shown(value)}, above the proved bound "
                               f"{shown(U)}: a bug, please report it"), ReasonCode.BUG
    if U is not None and tol >= U - R:
        return Verdict.OPTIMAL, "", None
    if B - nums.rr_high > tol:
        lead = (f"an interactive protocol ({nums.rounds} rounds) reaches {shown(B)}, above "
                f"the best non-interactive protocol, RR(epsilon, delta) ({shown(R)}), by "
                f"{float(B - nums.rr_high):.3g} of the gains' range")
        helps = ReasonCode.INTERACTION_HELPS
        if U is None:
            return Verdict.INTERACTION_HELPS, lead, helps
        if nums.closed(tol):
            return Verdict.INTERACTION_HELPS, (
                f"{lead}; the envelope bound {shown(U)} is within --tol of it: the "
                f"interactive optimum is {shown(B)} (bracket width {float(U - B):.3g})"), helps
        return Verdict.INTERACTION_HELPS, (
            f"{lead}; the optimum lies in [{shown(B)}, {shown(U)}] (width "
            f"{float(U - B):.3g} of the gains' range)"), helps
    if U is None:
        return Verdict.ERROR, "the upper bound could not be proved", ReasonCode.SOLVER_FAILED
    return Verdict.OPEN, (
        f"open: the optimum lies in [{shown(B)}, {shown(U)}] (the best protocol found, the "
        f"bound; width {float(U - B):.3g} of the gains' range) and RR(epsilon, delta) reaches "
        f"{shown(R)}: whether interaction helps is not decided"), ReasonCode.OPEN


def _witness(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             deltas: Sequence[Fraction], levels: Sequence[Fraction], found: ScheduleSolution,
             units: Units, options: VerifyOptions, nums: ApproxNumbers,
             directory: Path | None) -> None:
    """The search's best protocol made exact (at the rational rays `levels`), written
    (under `directory`, when given) and valued from its text as read back; kept when it
    beats RR's exact value, else its file is removed."""
    protocol = exact_grid(found.splits, found.schedule, levels, spec.parties)
    coin = repair_weight(protocol, deltas)
    text = witness_text(
        spec, agent, accuracy, deltas, protocol, coin,
        name=witness_name(spec, agent, accuracy).removesuffix(".toml"),
        note=f"an interactive protocol found by dpverify for {agent.name} "
             f"({accuracy.value}) of {spec.name}: {len(protocol.rounds)} rounds")
    path = None
    source = "<witness>"
    if directory is not None:
        path = write_witness(directory, witness_name(spec, agent, accuracy), text)
        text, source = path.read_text(encoding="utf-8"), str(path)
    checked = check_witness(text, spec, agent, accuracy, deltas, units, options, source)
    if checked.value is None:
        nums.notes += (f"the best protocol found was refused as a witness: {checked.reason}",)
    elif nums.rr_low is not None and checked.value > nums.rr_low:
        nums.best, nums.witness = checked.value, text
        nums.witness_deltas = checked.deltas
        nums.witness_path = None if path is None else str(path)
        nums.rounds = len(protocol.rounds) + (1 if coin else 0)
        return
    if path is not None:
        path.unlink(missing_ok=True)  # refused, or no better than RR: no witness


def search_protocol(floats: FloatEnvelope, levels: Sequence[Fraction],
                    deltas: Sequence[Fraction], units: Units, party: int, worst: bool,
                    options: VerifyOptions, *, stop_at: float, seconds: float
                    ) -> SearchReport:
    """The schedule search (schedule.py) at the witness's rays, from the envelope's flow."""
    objective = ScheduleObjective(tuple(float(v) for v in levels),
                                  tuple(float(d) for d in deltas), units.unit, party, worst)
    flow = None
    if floats.theta is not None and floats.sigma is not None and floats.chords is not None \
            and floats.data is not None:
        flow = Flow(floats.theta, floats.sigma, floats.chords, floats.data.counts)
    return find_protocol(objective, options, stop_at=stop_at,
                         deadline=time.perf_counter() + seconds, flow=flow,
                         greedy=len(levels) <= GREEDY_PARTIES,
                         flow_lp=len(levels) <= FLOW_LP_PARTIES)


def approximate_result(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       deltas: Sequence[Fraction], options: VerifyOptions, *,
                       search_seconds: float | None = None, always_search: bool = False,
                       directory: Path | None = None) -> ApproxResult:
    """Bound, non-interactive value, search and witness for one agent and accuracy of a
    problem on bits with deltas (one per party, in [0, 1)); module docstring. A witness
    file is written under `directory` when given (else it is valued from its text)."""
    start = time.perf_counter()
    deltas = tuple(Fraction(d) for d in deltas)
    if len(deltas) != spec.parties or any(not 0 <= d < 1 for d in deltas):
        raise ValueError(f"deltas must be {spec.parties} numbers in [0, 1): {deltas}")
    table = tabulate(spec, agent)
    worst = accuracy is Accuracy.WORST
    labels = len(table.outputs) ** (1 if agent.party == 0 else 2)
    check_limit(spec.source, envelope_nonzeros(spec.parties, deltas, labels, worst), options,
                f"parties = {spec.parties} and {labels} labels (four rays per party)")
    units = units_of(table.gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    nums = ApproxNumbers()
    proved, floats = proved_envelope(spec.lambdas, upper, deltas, units.unit, units.exact,
                                     agent.party, worst, options)
    nums.bound = None if proved is None else proved.bound
    if nums.bound is None:
        nums.notes += (floats.failure or "the envelope LP gave no duals",)
    rr = noninteractive_value(lower, upper, deltas, units, agent.party, worst, options)
    nums.rr_low, nums.rr_high, nums.best = rr.lower, rr.upper, rr.lower
    report = None
    if rr.lower is not None and (always_search or nums.bound is None
                                 or nums.bound - rr.lower > options.tol):
        levels = [witness_level(v) for v in lower]
        stop = float(nums.bound) - options.tol / 4 if nums.bound is not None else np.inf
        report = search_protocol(floats, levels, deltas, units, agent.party, worst, options,
                                 stop_at=stop, seconds=search_seconds_for(spec.parties)
                                 if search_seconds is None else search_seconds)
        if report.best is not None and report.best.value > float(rr.lower) + 1e-12:
            _witness(spec, agent, accuracy, deltas, levels, report.best, units, options,
                     nums, directory)
    verdict, reason, code = decided(nums, options.tol, units)
    proof = None
    if options.certify and nums.bound is not None:
        proof, failure = delta_proof(spec, agent, accuracy, options, floats)
        if failure:
            verdict, reason, code = Verdict.ERROR, failure, ReasonCode.CHECK_FAILED
    if nums.witness_path is not None:
        reason += f"; the witness is {nums.witness_path} (`dpverify audit` checks it)"
    user = _user(units)
    closed = verdict is Verdict.INTERACTION_HELPS and nums.closed(options.tol)
    reason = "; ".join(r for r in (reason, *nums.notes) if r)
    code = code if code is not None or not reason else ReasonCode.NOTE
    return ApproxResult(
        agent.name, accuracy.value, deltas, units.user(nums.bound), units.user(nums.rr_low),
        units.user(nums.best), nums.witness_path, verdict, reason, time.perf_counter() - start,
        relaxed_optimum_exact=user(nums.bound), rr_value_exact=user(nums.rr_low),
        best_value_exact=user(nums.best), witness_deltas=nums.witness_deltas,
        origin="grid" if nums.witness else "rr",
        search_starts=report.tried if report else 0,
        search_steps=nums.rounds, witness_text=nums.witness, proof=proof, closed=closed,
        code=code)


def _user(units: Units):
    def convert(v: Fraction | None) -> Fraction | None:
        return None if v is None else units.lo + units.span * v
    return convert
