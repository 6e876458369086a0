"""Witnesses for inputs with more than two symbols: the best protocol found, written as a
protocol file (`kind = "protocol"`, docs/format.md) and valued again from that file alone
(docs/theory.md, section 6.4).

The file is the evidence. Its value is recomputed through the audit's own steps: the file
is loaded by the protocol loader, its transcripts are built exactly
(theory/protocols/transcripts.py),
the levels it achieves are measured exactly and must not exceed the lower rational
bracket of each party's level (so the protocol is DP at the problem's levels, also when
they are given as epsilon), and the agent's accuracy is that of an explicit decision rule
on those transcripts (verifiers/protocol_value.py), exact or an exact lower bracket.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpverify.errors import SpecError
from dpverify.filenames import file_stem, make_directory, output_path, write_output
from dpverify.records import record
from dpverify.spec import ProtocolSpec, load, loads
from dpverify.spec.documents import problem_document
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.protocol_writer import protocol_text
from dpverify.spec.tables import tabulate
from dpverify.theory.protocols.transcripts import achieved_lambdas, transcripts
from dpverify.theory.units import Units
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value


@record(eq=False)
class WitnessValue:
    """A witness's exact value (normalised gains) and its exact rule, or why it was
    refused (`reason`, value None)."""

    value: Fraction | None
    rule: list | None = None  # rule[a][o][y] as Fractions
    method: str = ""
    reason: str = ""


def witness_name(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy) -> str:
    """`<problem>.<agent>.<accuracy>.witness.toml` (agent `observer` or `party-i`; the
    problem's name made a plain file name, `dpverify.filenames.file_stem`)."""
    return f"{file_stem(spec.name)}.{agent.name.replace(':', '-')}.{accuracy.value}" \
           ".witness.toml"


def witness_text(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                 channels: Sequence[Sequence[Sequence[Fraction]]], note: str) -> str:
    """The protocol file of a non-interactive protocol: party i speaks in round i with its
    channel (exact "p/q" entries), for the problem's levels and this agent only."""
    document = problem_document(spec)
    document["problem"]["accuracy"] = [accuracy.value]
    key = "observer" if agent.party == 0 else "party"
    kept = {"problem": document["problem"]}
    if key == "observer":
        kept["observer"] = document["observer"]
    else:
        kept["party"] = [t for t in document["party"] if t["index"] == agent.party]
    kernels = [np.array([row for row in C], dtype=object)[None] for C in channels]
    return protocol_text(
        kept, name=witness_name(spec, agent, accuracy).removesuffix(".toml"),
        description=f"A non-interactive protocol found by dpverify for {agent.name} "
                    f"({accuracy.value}) of {spec.name}: {note}",
        speakers=list(range(1, spec.parties + 1)), kernels=kernels,
        comment="dpverify: a witness protocol (docs/theory.md, section 6.4); audit it with "
                "`dpverify audit`")


def write_witness(directory: Path, spec: MultipartySpec, agent: AgentSpec,
                  accuracy: Accuracy, channels, note: str) -> Path:
    make_directory(directory)  # a `.dpverify` folder is marked as a cache
    path = output_path(directory, witness_name(spec, agent, accuracy))
    return write_output(path, witness_text(spec, agent, accuracy, channels, note))


def witness_value(source: Path | str, spec: MultipartySpec, agent: AgentSpec,
                  accuracy: Accuracy, lower: Sequence[Fraction], units: Units,
                  options: VerifyOptions, *, text: str | None = None) -> WitnessValue:
    """The value of the witness at `source` (or of its `text`), recomputed from the file
    (module docstring), in the problem's normalised gains `units`; refused when the
    file is not a protocol for this problem's inputs and agent, or when some party's
    achieved level exceeds `lower` (its rational lower bracket)."""
    try:
        wspec = loads(text, source=str(source)) if text is not None else load(source)
    except SpecError as exc:
        return WitnessValue(None, reason=f"the witness file does not load: {exc}")
    if not isinstance(wspec, ProtocolSpec) or wspec.alphabets != spec.alphabets:
        return WitnessValue(None, reason="the witness is not a protocol on the problem's inputs")
    twin = next((a for a in wspec.agents if a.name == agent.name), None)
    if twin is None or accuracy not in wspec.accuracies:
        return WitnessValue(None, reason=f"the witness has no {agent.name} {accuracy.value}")
    tr = transcripts(wspec, exact=True)
    for i, level in enumerate(achieved_lambdas(tr)):
        if not isinstance(level, Fraction) or level > lower[i]:
            return WitnessValue(None, reason=(
                f"the witness is not DP at the problem's level: party {i + 1} achieves "
                f"lambda = {level}, above {lower[i]}"))
    table = tabulate(wspec.claimed(), twin)
    if table.gain_exact != tabulate(spec, agent).gain_exact:
        return WitnessValue(None, reason=f"the witness's {agent.name} computes another "
                                         "function or gain than the problem's")
    value = protocol_value(tr, units.unit, units.exact, agent.party,
                           accuracy is Accuracy.WORST, options)
    if not value.ok or value.rule_exact is None:
        return WitnessValue(None, reason=f"the witness's value could not be computed "
                                         f"({value.failure or 'no exact rule'})")
    lowest = Fraction(value.exact) if value.exact is not None else value.lower_exact
    return WitnessValue(lowest, value.rule_exact, value.method)
