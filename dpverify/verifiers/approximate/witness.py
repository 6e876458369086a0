"""Exact (epsilon, delta) witnesses: a grid protocol found in floats (schedule.py) made
exact, written as a protocol file, and valued again from that file alone (docs/theory.md,
section 7.11).

* **Exact rays.** The witness's rays are at a short rational lambda_w <= the lower bracket
  of e^epsilon (`witness_level`): a protocol that is (lambda_w, delta)-DP is DP at every
  higher level (hockey-stick sums only fall as lambda grows). Every split of the float
  protocol is made exact at those rays (theory/approx/grid.py, `exact_split`): the kappas
  rounded but two, solved exactly, so that every party's factor is exactly a ray times a
  scalar after every message.
* **Exactly private.** The grid protocol's hockey-stick sums are those of its final
  states' masses, exactly (grid.hockey_sums). When one exceeds its delta (the rounding of
  the float solution, about 1e-15), the protocol is mixed with one that says nothing: a
  first round in which party 1 says 1 with probability t whatever its bit, after which
  everyone stays (the default kernel). Their transcripts are disjoint, so the mixture's
  sums are (1 - t) times the protocol's; t is the least multiple of 2^-40 with
  t >= 1 - delta_i / HS_i (`repair_weight`).
* **The file.** `kind = "protocol"` with the problem's claims, this agent and accuracy,
  and `delta` in `[problem]` (docs/format.md): per round the speaker, its message count
  (the most targets any state uses) and a kernel per reachable prefix that does more than
  stay, the `"*"` default staying (`grid_rounds`).
* **Valued from the file.** The protocol loader reads the file (with its `delta`), its
  exact transcripts give every party's achieved delta at the claimed levels
  (theory/approx/hockey.py: an exact bracket for epsilon claims), each must be proved at
  most its claim, and the agent's accuracy is that of an explicit decision rule
  (verifiers/protocol_value.py: for the worst case the float LP's rule valued exactly,
  without the exact simplex, whose rationals grow with the rounds). That is the witness's
  value (`check_witness`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpverify.errors import SpecError
from dpverify.filenames import file_stem, make_directory, output_path, write_output
from dpverify.records import record
from dpverify.spec import ProtocolSpec, loads
from dpverify.spec.documents import number, problem_document, toml_text
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.protocol_writer import PROBLEM_COPIED
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.grid import (
    GridProtocol,
    GridRound,
    digits,
    exact_split,
    kernel_rows,
    moved,
)
from dpverify.theory.approx.grid import hockey_sums as grid_hockey_sums
from dpverify.theory.approx.hockey import (
    DeltaBracket,
    exact_protocol_transcripts,
    protocol_deltas,
)
from dpverify.theory.units import Units
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value


def _delta_value(deltas: Sequence[Fraction]) -> object:
    written = [number(Fraction(v)) for v in deltas]
    return written[0] if len(set(deltas)) == 1 else written


# -- the protocol file and its value -----------------------------------------------------
def witness_name(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy) -> str:
    """`<problem>.<agent>.<accuracy>.witness.toml` (agent `observer` or `party-i`; the
    problem's name made one plain file name component, `dpverify.filenames.file_stem`).
    A sweep's point (source `file.toml@delta=0.1`, sweeps/points.py) adds its place to the
    name, so that the points of one sweep do not overwrite each other's witnesses."""
    base, _, place = spec.source.rpartition("@")
    name = f"{spec.name}@{place}" if base and "=" in place else spec.name
    return f"{file_stem(name)}.{agent.name.replace(':', '-')}.{accuracy.value}.witness.toml"


def write_witness(directory: Path, filename: str, text: str) -> Path:
    """Write a witness file directly inside `directory` (created when missing); never
    outside it (`dpverify.filenames.output_path`, InputError otherwise)."""
    path = output_path(directory, filename)
    make_directory(directory)  # a `.dpverify` folder is marked as a cache
    return write_output(path, text)


def read_protocol_text(text: str, source: str = "<witness>"
                       ) -> tuple[ProtocolSpec, tuple[Fraction, ...]]:
    """A protocol file: its spec and its claimed deltas, one per party (0 where it
    claims pure epsilon-DP). SpecError on bad input, and for a file of another kind."""
    spec = loads(text, source=source)
    if not isinstance(spec, ProtocolSpec):
        raise SpecError(source, "problem.kind", spec.kind.value, 'must be "protocol"')
    return spec, spec.deltas


@record(eq=False)
class WitnessCheck:
    """A witness valued from its file: its exact value (normalised gains; None when
    refused, with `reason`) and each party's achieved delta at the claimed levels."""

    value: Fraction | None
    deltas: tuple[DeltaBracket, ...] = ()
    method: str = ""
    reason: str = ""


def _same_levels(a: ProtocolSpec, spec: MultipartySpec) -> bool:
    return a.lambdas_exact == spec.lambdas_exact and a.epsilons_exact == spec.epsilons_exact


def check_witness(text: str, spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  deltas: Sequence[Fraction], units: Units, options: VerifyOptions,
                  source: str = "<witness>") -> WitnessCheck:
    """The witness's value from its text alone (module docstring)."""
    try:
        wspec, claimed = read_protocol_text(text, source)
    except SpecError as exc:
        return WitnessCheck(None, reason=f"the witness file does not load: {exc}")
    if wspec.alphabets != spec.alphabets or not _same_levels(wspec, spec):
        return WitnessCheck(None, reason="the witness is not a protocol on the problem's "
                                         "inputs at its levels")
    if claimed is None or tuple(claimed) != tuple(Fraction(d) for d in deltas):
        return WitnessCheck(None, reason="the witness does not claim the problem's deltas")
    twin = next((a for a in wspec.agents if a.name == agent.name), None)
    if twin is None or accuracy not in wspec.accuracies:
        return WitnessCheck(None, reason=f"the witness has no {agent.name} {accuracy.value}")
    if tabulate(wspec.claimed(), twin).gain_exact != tabulate(spec, agent).gain_exact:
        return WitnessCheck(None, reason=f"the witness's {agent.name} computes another "
                                         "function or gain than the problem's")
    try:
        tr = exact_protocol_transcripts(wspec)
    except ValueError as exc:
        return WitnessCheck(None, reason=f"the witness is too large to value exactly: {exc}")
    achieved = protocol_deltas(wspec, tr)
    for i, bracket in enumerate(achieved):
        if bracket.meets(Fraction(deltas[i])) is not True:
            return WitnessCheck(None, achieved, reason=(
                f"the witness is not proved ({wspec.lambdas[i]:.6g}, {deltas[i]})-DP for "
                f"party {i + 1}: its achieved delta lies in [{float(bracket.lower):.6g}, "
                f"{float(bracket.upper):.6g}]"))
    exact = [[(v - units.lo) / units.span for v in row]
             for row in tabulate(spec, agent).gain_exact]
    unit = np.array([[float(v) for v in row] for row in exact], dtype=np.float64)
    value = protocol_value(tr, unit, exact, agent.party, accuracy is Accuracy.WORST, options,
                           exact_lp=False)
    if not value.ok or (value.exact is None and value.lower_exact is None):
        return WitnessCheck(None, achieved, reason=(
            f"the witness's value could not be computed exactly ({value.failure})"))
    lowest = value.exact if value.exact is not None else value.lower_exact
    assert lowest is not None  # checked above
    return WitnessCheck(Fraction(lowest), achieved, value.method)


# -- grid protocols (theory/approx/grid.py): the witnesses of the envelope bound ---------
WITNESS_SNAP = 10**6  # a level's rational for the witness's rays: denominators up to this
WITNESS_BITS = 1 << 44  # else the level rounded down to a multiple of 2^-44
COIN_BITS = 1 << 40


def witness_level(lam_lo: Fraction) -> Fraction:
    """A short rational lambda_w <= lam_lo (the witness's rays): every protocol that is
    (lambda_w, delta)-DP is (lam_lo, delta)-DP, its hockey-stick sums being
    non-increasing in lambda; within 1e-11 of lam_lo."""
    lam_lo = Fraction(lam_lo)
    short = lam_lo.limit_denominator(WITNESS_SNAP)
    if short <= lam_lo and lam_lo - short <= Fraction(1, 10**11):
        return max(short, Fraction(1))
    return max(Fraction(math.floor(lam_lo * WITNESS_BITS), WITNESS_BITS), Fraction(1))


def exact_grid(splits: Sequence[dict], schedule: Sequence[int], lambdas_w: Sequence[Fraction],
               parties: int) -> GridProtocol:
    """The float splits of a schedule LP's solution made exact at the rational rays
    `lambdas_w` (grid.exact_split), for the states the exact protocol reaches; a split
    that cannot be made exact (solver noise at a state of almost no mass) stays, which is
    a valid message (the exact value is computed from the file)."""
    rounds = []
    reached = {encode_start(parties)}
    for j, rnd in zip(schedule, splits, strict=True):
        exact: dict[int, tuple[tuple[int, Fraction], ...]] = {}
        nxt: set[int] = set()
        for s in reached:
            v = digits(s, parties)[j]
            split = rnd.get(s)
            pairs = exact_split(v, split, Fraction(lambdas_w[j])) if split else None
            if pairs is None:  # no split, or one that cannot be exact: the state stays
                pairs = [(v, Fraction(1))]
            if not (len(pairs) == 1 and pairs[0][0] == v):
                stay = [p for p in pairs if p[0] == v]
                exact[s] = tuple(stay + [p for p in pairs if p[0] != v])
            for t, _ in pairs:
                nxt.add(moved(s, j, t, parties))
        rounds.append(GridRound(j, exact))
        reached = nxt
    return GridProtocol(parties, tuple(Fraction(v) for v in lambdas_w), tuple(rounds))


def encode_start(parties: int) -> int:
    return GridProtocol(parties, (Fraction(1),) * parties, ()).start


def repair_weight(protocol: GridProtocol, deltas: Sequence[Fraction]) -> Fraction:
    """The least dyadic t (multiple of 2^-40) such that mixing the protocol with weight t
    of a protocol that says nothing (a public coin first) meets every delta exactly: the
    mixture's hockey-stick sums are (1 - t) times the protocol's (disjoint transcripts),
    so t >= 1 - delta_i / HS_i; 0 when the protocol meets them already."""
    spent = grid_hockey_sums(protocol, protocol.lambdas)
    need = Fraction(0)
    for hs, delta in zip(spent, deltas, strict=True):
        if hs > delta:
            need = max(need, 1 - Fraction(delta) / hs)
    return min(Fraction(math.ceil(need * COIN_BITS), COIN_BITS), Fraction(1))


def grid_rounds(protocol: GridProtocol, coin: Fraction = Fraction(0)) -> list[dict]:
    """The `[[round]]` tables of a grid protocol (theory/approx/grid.py): per round the
    speaker, its message count and a kernel per reachable prefix that does more than stay
    (the "*" default: message 0, stay). With a `coin` t > 0, party 1 first says 1 with
    probability t whatever its bit, and after it everyone stays: the mixture of
    `repair_weight`."""
    k = protocol.parties
    tables: list[dict] = []
    frontier: list[tuple[tuple[int, ...], int]] = [((), protocol.start)]
    if coin:
        tables.append({"party": 1, "messages": 2,
                       "kernel": [[1 - coin, coin], [1 - coin, coin]]})
        frontier = [((0,), protocol.start)]
    for rnd in protocol.rounds:
        M = rnd.messages
        stay = [[Fraction(1)] + [Fraction(0)] * (M - 1)] * 2
        keyed: dict[str, list[list[Fraction]]] = {"*": stay}
        nxt = []
        for prefix, s in frontier:
            split = rnd.split(s, k)
            v = digits(s, k)[rnd.party]
            if len(split) > 1 or split[0][0] != v:
                rows = kernel_rows(v, split, protocol.lambdas[rnd.party])
                keyed[",".join(map(str, prefix))] = [r + [Fraction(0)] * (M - len(r))
                                                     for r in rows]
            for m, (t, _) in enumerate(split):
                nxt.append((prefix + (m,), moved(s, rnd.party, t, k)))
        frontier = nxt
        tables.append({"party": rnd.party + 1, "messages": M,
                       "kernel": keyed if len(keyed) > 1 else stay})
    return tables


def witness_text(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                      deltas: Sequence[Fraction], protocol: GridProtocol, coin: Fraction,
                      *, name: str, note: str) -> str:
    """The protocol file of a grid protocol, claiming the problem's levels and `deltas`,
    for this agent only."""
    document = problem_document(spec)
    document["problem"]["accuracy"] = [accuracy.value]
    document["problem"]["delta"] = _delta_value(deltas)
    head = {key: document["problem"][key] for key in PROBLEM_COPIED
            if key in document["problem"]}
    out: dict = {"problem": {"kind": "protocol", "name": name, "description": note, **head},
                 "round": grid_rounds(protocol, coin)}
    if agent.party == 0:
        out["observer"] = document["observer"]
    else:
        out["party"] = [t for t in document["party"] if t["index"] == agent.party]
    return toml_text(out, "<protocol>",
                     comment="dpverify: an (epsilon, delta) witness protocol, a grid "
                             "protocol (docs/theory.md, section 7.11)")
