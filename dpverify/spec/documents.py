"""The documents dpverify writes, and the one TOML writer for them (`toml_text`): problem
files built in code (dpverify.problem), protocol files (spec/protocol_writer.py: witnesses,
counterexamples, `falsify --save-best`), the instances `dpverify survey` saves, and a
multi-party spec written back as a problem document (the dict of a TOML file), so that
dpverify can write files that its own loader reads to the same spec.

Numbers stay exact: a level or a value that a float represents exactly is written as that
float, any other rational as a "p/q" string where the format allows strings (levels, gain
matrices) and as a float otherwise (function tables and outputs come from TOML numbers, so
they are floats' exact values already).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpverify.errors import SpecError
from dpverify.spec.functions import written
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
        return written(fn.name, fn.param)
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
    if spec.approximate:
        deltas = [number(d) for d in spec.deltas]
        problem["delta"] = deltas[0] if len(set(spec.deltas)) == 1 else deltas
    problem["accuracy"] = [a.value for a in spec.accuracies]
    out: dict[str, Any] = {"problem": problem}
    parties = [agent_table(a) for a in spec.agents if a.party]
    observer = [agent_table(a) for a in spec.agents if not a.party]
    if observer:
        out["observer"] = observer[0]
    if parties:
        out["party"] = parties
    return out


# -- the TOML writer ------------------------------------------------------------------------
_WRITABLE = "cannot be written to a problem file: use numbers, strings, lists and tables"


def toml_text(document: Mapping[str, Any], source: str = "<document>", *,
              comment: str = "") -> str:
    """A TOML document (plain data) as text, after `comment` (one `# ` line per line):
    top-level tables as `[table]`, lists of tables as `[[table]]`; inside a table, a
    table of tables (`[expect.observer]`) or any other table that is not a value of the
    format (`{ expr = ... }`, `{ table = [...] }`, ...) as a sub-table `[a.b]`, values
    inline. Fractions are written as exact "p/q" strings; a value TOML cannot hold raises
    SpecError naming its key."""
    import tomlkit

    out = tomlkit.document()
    for line in comment.splitlines():
        out.add(tomlkit.comment(line))
    for key, value in document.items():
        if isinstance(value, Mapping):
            out.add(key, _table(value, key, source))
        elif _is_table_list(value):
            tables = tomlkit.aot()
            for i, entry in enumerate(value):
                tables.append(_table(entry, f"{key}[{i}]", source))
            out.add(key, tables)
        else:
            out.add(key, _item(value, key, source))
    return tomlkit.dumps(out)


def toml_value(value: Any, source: str = "<document>") -> str:
    """One value as TOML writes it (a string quoted and escaped), for texts written by
    hand around it (the templates of `dpverify new`)."""
    return _item(value, "", source).as_string()


def _is_table_list(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and bool(value)
            and all(isinstance(v, Mapping) for v in value))


# Tables that are values of the format, written inline: `function = { expr = "..." }`.
VALUE_FORMS = ("expr", "table", "counts", "matrix", "set")


def _is_value(value: Mapping[str, Any]) -> bool:
    return len(value) == 1 and next(iter(value)) in VALUE_FORMS


def _table(value: Mapping[str, Any], key: str, source: str) -> Any:
    import tomlkit

    table = tomlkit.table()
    for k, v in value.items():
        name = _key(k, key, source)
        if isinstance(v, Mapping) and not _is_value(v):
            table.add(name, _table(v, f"{key}.{k}", source))
        else:
            table.add(name, _item(v, f"{key}.{k}", source))
    return table


def _key(name: Any, key: str, source: str) -> str:
    if not isinstance(name, str):
        raise SpecError(source, key, name, "table keys must be strings")
    return name


def _item(value: Any, key: str, source: str) -> Any:
    import tomlkit

    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        for k, v in value.items():
            table.append(_key(k, key, source), _item(v, f"{key}.{k}", source))
        return table
    if isinstance(value, Sequence) and not isinstance(value, str):
        array = tomlkit.array()
        for i, v in enumerate(value):
            array.append(_item(v, f"{key}[{i}]", source))
        return array
    return tomlkit.item(_scalar(value, key, source))


def _scalar(value: Any, key: str, source: str) -> bool | int | float | str:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, Fraction):
        return str(value)  # "p/q", exact ("3" for an integer)
    if isinstance(value, Decimal):
        return format(value, "f") if value.is_finite() else float(value)
    if isinstance(value, numbers.Real):  # float, numpy floats (NaN is refused by the loader)
        return float(value)
    raise SpecError(source, key, value, _WRITABLE)
