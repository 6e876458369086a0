"""The points of a sweep: the loaded problem with its privacy level (or `parties`, or
`alpha`) replaced, one full problem per point, each validated as a file would be.

`--parties` needs every agent to be defined for every k swept: a `{ table = ... }`
function lists values for one k only, an expression naming `x5` exists only for k >= 5,
party 4 only for k >= 4. Such a problem is refused up front, in one line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpverify.errors import OptionError, SpecError
from dpverify.problem import Problem
from dpverify.records import record
from dpverify.spec.model import AgentSpec, Kind, MultipartySpec
from dpverify.sweeps.axes import LEVELS, Axis, Value, Variable

BINARY_FUNCTIONS = ("xor", "and", "or", "majority", "threshold", "bit")  # values 0 and 1
_BIT_NAME = re.compile(r"x([0-9]+)")


@record(eq=False)
class PlannedPoint:
    """One point of a sweep before it runs: where it is (`coords`, e.g. `{"epsilon": 0.5,
    "parties": 4}`), the problem built for it, and the `source` naming it."""

    index: int
    coords: dict[str, Value]
    problem: Problem

    @property
    def source(self) -> str:
        return self.problem.source


def point_source(base: str, coords: dict[str, Value]) -> str:
    """`problems/xor-4.toml@parties=4,epsilon=0.5`: a point named after its file."""
    return base + "@" + ",".join(f"{name}={_show(value)}" for name, value in coords.items())


def _show(value: Value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def plan_points(problem: Problem, *, level: Axis | None = None,
                parties: Axis | None = None) -> tuple[PlannedPoint, ...]:
    """Every point of the grid `parties x level` (parties outermost), each a validated
    problem. OptionError when an axis does not apply to this problem; SpecError when a
    point is not a valid problem (say `--epsilon -1:1:3`)."""
    check_axes(problem, level, parties)
    if parties is not None:
        check_defined_for(problem, parties.values)
    outer: Sequence[Value | None] = parties.values if parties is not None else (None,)
    inner: Sequence[Value | None] = level.values if level is not None else (None,)
    points: list[PlannedPoint] = []
    for k in outer:
        for value in inner:
            coords: dict[str, Value] = {}
            changes: dict[str, Any] = {}
            if k is not None:
                coords["parties"] = k
                changes["parties"] = k
            if level is not None and value is not None:
                coords[str(level.variable)] = value
                name = "lambda_" if level.variable is Variable.LAMBDA else str(level.variable)
                changes[name] = value
            source = point_source(problem.source, coords)
            delta = changes.pop("delta", None)
            built = problem.replace(source=source, **changes)
            if delta is not None:
                built = with_delta(built, delta)
            points.append(PlannedPoint(len(points), coords, built))
    return tuple(points)


def with_delta(problem: Problem, delta: Value) -> Problem:
    """The problem with `delta` (one for every party; docs/theory.md, "Approximate
    privacy"), validated again. A decimal (a float of the axis) is taken as the exact
    decimal it denotes: 0.05 is 1/20, not the binary float nearest to it."""
    document = problem.document()
    table = dict(document.get("problem") or {})
    exact = Fraction(repr(delta)) if isinstance(delta, float) else Fraction(str(delta))
    table["delta"] = str(exact)
    document["problem"] = table
    return Problem.from_document(document, source=problem.source, default_name=problem.name)


def check_axes(problem: Problem, level: Axis | None, parties: Axis | None) -> None:
    """Refuse axes that do not apply to the problem's kind, in one line each."""
    if level is None and parties is None:
        raise OptionError("nothing to sweep: give --epsilon, --lambda, --alpha, --delta or "
                          "--parties")
    if level is not None and level.variable not in LEVELS:
        raise OptionError(f"--{level.variable} is not a privacy level")
    kind = problem.kind
    if kind == Kind.COUNT:
        if parties is not None:
            raise OptionError(f"{problem.source}: --parties applies to multi-party problems; a "
                              "count problem has answers 0..n: sweep --alpha or --epsilon")
        if level is not None and level.variable is Variable.LAMBDA:
            raise OptionError(f"{problem.source}: --lambda applies to multi-party problems; a "
                              "count problem's level is alpha = e^-epsilon: sweep --alpha or "
                              "--epsilon")
        if level is not None and level.variable is Variable.DELTA:
            raise OptionError(f"{problem.source}: --delta applies to multi-party problems; "
                              "give a count problem's delta in its file")
    elif kind == Kind.MULTIPARTY:
        if level is not None and level.variable is Variable.ALPHA:
            raise OptionError(f"{problem.source}: --alpha applies to count problems; a "
                              "multi-party problem's level is epsilon (lambda = e^epsilon): "
                              "sweep --epsilon or --lambda")
    else:
        raise OptionError(f"{problem.source}: sweeps cover multi-party and count problems, "
                          f"not {kind!r} problems")


def check_defined_for(problem: Problem, ks: Sequence[Value]) -> None:
    """Refuse (OptionError, one line) a problem whose agents are not defined for every k
    in `ks`."""
    spec = problem.spec
    if not isinstance(spec, MultipartySpec):
        return
    low = min(int(k) for k in ks)
    for agent in spec.agents:
        reason = _undefined(agent, low, spec.parties)
        if reason is not None:
            key, why = reason
            raise OptionError(f"{problem.source}: --parties: `{key}` {why}; --parties needs "
                              "agents defined for every k swept (names such as xor or "
                              "majority, or expressions over x, k and sum(x))")


def _undefined(agent: AgentSpec, low: int, k: int) -> tuple[str, str] | None:
    """(key, why) when `agent` is not defined for some k >= low; None when it is."""
    key = agent.key
    if agent.party > low:
        return f"{key}.index", f"= {agent.party}: party {agent.party} exists only for " \
                               f"parties >= {agent.party}, and --parties starts at {low}"
    f = agent.function
    if f.kind == "table":
        return f"{key}.function", f"is a table of 2^{k} values, defined for parties = {k} only"
    if f.kind == "named" and f.name in ("threshold", "bit") and f.param > low:
        return f"{key}.function", (f"= {f.describe()!r} is defined for parties >= {f.param} "
                                   f"only, and --parties starts at {low}")
    if f.kind == "expr":
        highest = max(expression_bits(f.text), default=0)
        if highest > low:
            return f"{key}.function.expr", (f"names x{highest}, so it is defined for parties "
                                            f">= {highest} only, and --parties starts at {low}")
    if agent.gain.kind == "matrix" and not (f.kind == "named" and f.name in BINARY_FUNCTIONS):
        return f"{key}.gain", ("is a matrix with one row per value of the function, and the "
                               "function's values change with k")
    return None


def expression_bits(text: str) -> set[int]:
    """The i of every name `xi` in an expression (parsed, never evaluated)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:  # the loader has accepted it; keep the check total anyway
        raise SpecError("<expression>", "", text, "not an expression") from None
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            match = _BIT_NAME.fullmatch(node.id)
            if match:
                out.add(int(match.group(1)))
    return out
