"""One agent and accuracy under (epsilon_i, delta_i)-DP (issue 20; docs/theory.md,
"Approximate privacy"): three exact numbers, in gains normalised to [0, 1] so that the
tolerance is relative to their range, and a verdict.

* U, a proved upper bound over every interactive (epsilon_i, delta_i)-DP protocol: the
  four-ray LP, its duals made exact at the upper rational brackets of the levels
  (verifiers/approximate/bound.py);
* R, the best non-interactive value: the product of RR(epsilon_i, delta_i) with the
  optimal rule, exactly (R_lo at the lower brackets, an explicit private protocol;
  R_hi >= its value at the true levels; equal for rational levels);
* B, the best interactive protocol found by the search, made exactly private, written as
  a protocol file and valued again from that file alone (witness.py); B = R_lo when
  nothing beats RR.

Verdicts (never guessed):

    R_lo > U or B > U     error: a bug (both are feasible points of the LP)
    U - R_lo <= tol       optimal: RR(epsilon, delta) attains the bound
    B - R_hi > tol        interaction-helps: the witness beats every non-interactive
                          protocol
    otherwise             open: the optimum lies in [B, U]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpverify.reasons import ReasonCode
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.hockey import DeltaBracket
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.approximate.bound import bound_nonzeros, proved_ray_bound
from dpverify.verifiers.approximate.certify import delta_proof
from dpverify.verifiers.approximate.noninteractive import noninteractive_value
from dpverify.verifiers.approximate.result import ApproxResult
from dpverify.verifiers.approximate.search import ApproxObjective, search
from dpverify.verifiers.approximate.witness import (
    check_witness,
    exact_protocol,
    witness_name,
    witness_text,
    write_witness,
)
from dpverify.verifiers.options import VerifyOptions, check_limit
from dpverify.verifiers.result import Verdict


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
    origin: str = "rr"
    notes: tuple[str, ...] = ()


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
        where = ("" if U is None else f"; the optimum lies in [{shown(B)}, {shown(U)}]"
                 if tol < U - B else "; it reaches the bound within --tol")
        return Verdict.INTERACTION_HELPS, (
            f"an interactive protocol ({nums.origin} start) reaches {shown(B)}, above the best "
            f"non-interactive protocol, RR(epsilon, delta) ({shown(R)}), by "
            f"{float(B - nums.rr_high):.3g} of the gains' range{where}"
        ), ReasonCode.INTERACTION_HELPS
    if U is None:
        return Verdict.ERROR, "the upper bound could not be proved", ReasonCode.SOLVER_FAILED
    return Verdict.OPEN, (
        f"open: the optimum lies in [{shown(B)}, {shown(U)}] (the best protocol found, the "
        f"bound; width {float(U - B):.3g} of the gains' range) and RR(epsilon, delta) reaches "
        f"{shown(R)}: whether interaction helps is not decided"), ReasonCode.OPEN


def _witness(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             deltas: Sequence[Fraction], lower: Sequence[Fraction], found, units: Units,
             options: VerifyOptions, nums: ApproxNumbers, directory: Path | None) -> None:
    """The search's best protocol made exact, written (under `directory`, when given) and
    valued from its text as read back; kept when it beats RR's exact value, else its file
    is removed."""
    kernels, _ = exact_protocol(found.protocol, lower, deltas)
    text = witness_text(spec, agent, accuracy, deltas, found.protocol.order, kernels,
                        name=witness_name(spec, agent, accuracy).removesuffix(".toml"),
                        note=f"an interactive protocol found by dpverify for {agent.name} "
                             f"({accuracy.value}) of {spec.name} ({found.origin} start)")
    path = None
    source = "<witness>"
    if directory is not None:
        path = write_witness(directory, witness_name(spec, agent, accuracy), text)
        text, source = path.read_text(encoding="utf-8"), str(path)
    checked = check_witness(text, spec, agent, accuracy, deltas, units, options, source)
    if checked.value is None:
        nums.notes += (f"the best protocol found was refused as a witness: {checked.reason}",)
    elif nums.rr_low is not None and checked.value > nums.rr_low:
        nums.best, nums.witness, nums.origin = checked.value, text, found.origin
        nums.witness_deltas = checked.deltas
        nums.witness_path = None if path is None else str(path)
        return
    if path is not None:
        path.unlink(missing_ok=True)  # refused, or no better than RR: no witness


def approximate_result(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                       deltas: Sequence[Fraction], options: VerifyOptions, *,
                       messages: int = 4, restarts: int | None = None,
                       seed: int | None = None, search_seconds: float = np.inf,
                       always_search: bool = False, directory: Path | None = None
                       ) -> ApproxResult:
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
    check_limit(spec.source, bound_nonzeros(spec.parties, deltas, labels, worst), options,
                f"parties = {spec.parties} and {labels} labels (four rays per party)")
    units = units_of(table.gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    nums = ApproxNumbers()
    nums.bound, floats = proved_ray_bound(spec.lambdas, upper, deltas, units.unit, units.exact,
                                          agent.party, worst, options)
    if nums.bound is None:
        nums.notes += (floats.failure or "the four-ray LP gave no duals",)
    rr = noninteractive_value(lower, upper, deltas, units, agent.party, worst, options)
    nums.rr_low, nums.rr_high, nums.best = rr.lower, rr.upper, rr.lower
    report = None
    if rr.lower is not None and (always_search or nums.bound is None
                                 or nums.bound - rr.lower > options.tol):
        objective = ApproxObjective(tuple(float(v) for v in lower),
                                    tuple(float(d) for d in deltas), units.unit,
                                    agent.party, worst)
        stop = float(nums.bound) - options.tol / 4 if nums.bound is not None else np.inf
        report = search(objective, options, messages=messages,
                        restarts=options.restarts if restarts is None else restarts,
                        seed=options.seed if seed is None else seed, stop_at=stop,
                        prior=floats.pi, seconds=search_seconds)
        if report.best.value > float(rr.lower) + 1e-12:
            _witness(spec, agent, accuracy, deltas, lower, report.best, units, options, nums,
                     directory)
    verdict, reason, code = decided(nums, options.tol, units)
    proof = None
    if options.certify and nums.bound is not None:
        proof, failure = delta_proof(spec, agent, accuracy, options, floats)
        if failure:
            verdict, reason, code = Verdict.ERROR, failure, ReasonCode.CHECK_FAILED
    if nums.witness_path is not None:
        reason += f"; the witness is {nums.witness_path} (`dpverify audit` checks it)"
    user = _user(units)
    reason = "; ".join(r for r in (reason, *nums.notes) if r)
    code = code if code is not None or not reason else ReasonCode.NOTE
    return ApproxResult(
        agent.name, accuracy.value, deltas, units.user(nums.bound), units.user(nums.rr_low),
        units.user(nums.best), nums.witness_path, verdict, reason, time.perf_counter() - start,
        relaxed_optimum_exact=user(nums.bound), rr_value_exact=user(nums.rr_low),
        best_value_exact=user(nums.best), witness_deltas=nums.witness_deltas,
        origin=nums.origin if nums.witness else "rr",
        search_starts=report.starts if report else 0,
        search_steps=report.steps if report else 0, witness_text=nums.witness, proof=proof,
        code=code)


def _user(units: Units):
    def convert(v: Fraction | None) -> Fraction | None:
        return None if v is None else units.lo + units.span * v
    return convert
