"""A multi-party spec written back as a problem document (the dict of a TOML file), so that
dpverify can write files that its own loader reads to the same spec: witness protocols
(spec/protocol_writer.py) and the instances `dpverify survey` saves.

Numbers stay exact: a level or a value that a float represents exactly is written as that
float, any other rational as a "p/q" string where the format allows strings (levels, gain
matrices) and as a float otherwise (function tables and outputs come from TOML numbers, so
they are floats' exact values already).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpverify.spec.model import AgentSpec, FunctionDef, GainDef, MultipartySpec


def number(v: Fraction, *, strings: bool = True) -> int | float | str:
    """An exact number as TOML will read it back exactly."""
    v = Fraction(v)
    if v.denominator == 1:
        return int(v)
    if Fraction(float(v)) == v or not strings:
        return float(v)
    return f"{v.numerator}/{v.denominator}"


def _levels(spec: MultipartySpec) -> tuple[str, Any]:
    key, values = (("lambda", spec.lambdas_exact) if spec.lambdas_exact is not None
                   else ("epsilon", spec.epsilons_exact))
    assert values is not None  # a spec has one of them
    written = [number(v) for v in values]
    return key, written[0] if len(set(values)) == 1 else written


def function_value(fn: FunctionDef) -> Any:
    if fn.kind == "named":
        return f"{fn.name}:{fn.param}" if fn.name in ("threshold", "bit", "mod") else fn.name
    if fn.kind == "expr":
        return {"expr": fn.text}
    return {fn.kind: [number(v, strings=False) for v in fn.values]}


def gain_value(gain: GainDef) -> Any:
    if gain.kind == "named":
        return gain.name
    if gain.kind == "expr":
        return {"expr": gain.text}
    return {"matrix": [[number(v) for v in row] for row in gain.matrix]}


def agent_table(agent: AgentSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if agent.party:
        out["index"] = agent.party
    out["function"] = function_value(agent.function)
    out["gain"] = gain_value(agent.gain)
    if agent.outputs is not None:
        out["outputs"] = [number(v, strings=False) for v in agent.outputs]
    return out


def problem_document(spec: MultipartySpec) -> dict[str, Any]:
    """The document of a multi-party problem file that loads to `spec` (without its
    [expect] tables)."""
    key, levels = _levels(spec)
    problem: dict[str, Any] = {"name": spec.name}
    if spec.description:
        problem["description"] = spec.description
    problem["parties"] = spec.parties
    if not spec.binary:
        alphabets = list(spec.alphabets)
        problem["alphabet"] = alphabets[0] if len(set(alphabets)) == 1 else alphabets
    problem[key] = levels
    problem["accuracy"] = [a.value for a in spec.accuracies]
    out: dict[str, Any] = {"problem": problem}
    parties = [agent_table(a) for a in spec.agents if a.party]
    observer = [agent_table(a) for a in spec.agents if not a.party]
    if observer:
        out["observer"] = observer[0]
    if parties:
        out["party"] = parties
    return out
