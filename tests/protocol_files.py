"""Protocol files written by hand for the tests of approximate privacy: a problem's agent
and claims, and explicit rounds (party i speaks in round `speakers[i]` with kernels[r][p]
after prefix p), as the protocol writer writes them (spec/protocol_writer.py)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpverify.spec.documents import number, problem_document
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.protocol_writer import protocol_text


def protocol_file(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                  deltas: Sequence[Fraction], speakers: Sequence[int],
                  kernels: Sequence[np.ndarray], *, name: str = "hand",
                  note: str = "by hand") -> str:
    """The protocol file's text, claiming the problem's levels and `deltas`, for `agent`."""
    document = problem_document(spec)
    document["problem"]["accuracy"] = [accuracy.value]
    written = [number(Fraction(d)) for d in deltas]
    document["problem"]["delta"] = written[0] if len(set(deltas)) == 1 else written
    kept = {"problem": document["problem"]}
    if agent.party == 0:
        kept["observer"] = document["observer"]
    else:
        kept["party"] = [t for t in document["party"] if t["index"] == agent.party]
    return protocol_text(kept, name=name, description=note, speakers=list(speakers),
                         kernels=list(kernels))
