"""TOML problem files -> validated, frozen specs (spec.md is the contract).

A problem file is data: loading reads the one file, parses it with `tomllib`, and
evaluates expressions only through the safe evaluator. Every error is a SpecError whose
message names the file, the key, the bad value and what is allowed.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpverify.errors import SizeLimitError, SpecError
from dpverify.spec.alphabet import (
    input_names,
    input_symbols,
    is_binary,
    read_alphabets,
    symbol_function,
)
from dpverify.spec.count_model import CountSpec
from dpverify.spec.counts import count_values, is_count_function
from dpverify.spec.expr import ExpressionError
from dpverify.spec.model import (
    EXPECTABLE_VERDICTS,
    Accuracy,
    AgentSpec,
    Expectation,
    FunctionDef,
    GainDef,
    Kind,
    MultipartySpec,
)
from dpverify.spec.numbers import MAX_DIGITS
from dpverify.spec.reader import (
    Table,
    exact_number,
    expected_value,
    expected_verdict,
    expression_text,
    read_text,
)
from dpverify.spec.tables import NAMED_FUNCTIONS, NAMED_GAINS, gain_rows, tabulate

# 2^k inputs: far beyond this no LP is conceivable, and a spec with k = 10^9 parties must
# not make the loader build per-party lists of 10^9 entries. Refused as a size limit
# (exit 3), like the size guard refuses parties = 40.
MAX_GENERAL_PARTIES = 60
# Symmetric functions need no 2^k table: the orbit methods handle them (docs/theory.md,
# "Symmetry"); per-party lists of this many entries are still cheap to read.
MAX_PARTIES = 100_000
# Tables and gains are tabulated at load time (to report their errors early) only while
# that is cheap; larger problems are tabulated by the verifier after its size guard.
LOAD_TABULATE_PARTIES = 12
LOAD_TABULATE_INPUTS = 1 << LOAD_TABULATE_PARTIES  # also for inputs with more symbols
LOAD_GAINS = 50_000  # gains of symmetric functions checked at load up to this many entries
PROBLEM_KEYS = ("name", "description", "kind", "parties", "epsilon", "lambda", "accuracy",
                "alphabet")
AGENT_KEYS = ("function", "gain", "outputs")
TOP_KEYS = ("problem", "observer", "party", "expect")
_INTEGER_ARG = re.compile(r"\+?[0-9]{1,9}")  # ASCII digits only: "bit:\u00b2" is no integer
ACCURACIES = tuple(a.value for a in Accuracy)


def load(path: str | Path) -> MultipartySpec | CountSpec:
    """Read and validate one problem file (any kind)."""
    return loads(read_text(path), source=str(path), default_name=Path(path).stem)


def loads(text: str, *, source: str = "<string>",
          default_name: str = "problem") -> MultipartySpec | CountSpec:
    """Validate the text of one problem file (any kind); `source` names it in messages."""
    try:
        document = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "", None, f"TOML syntax error: {exc}") from None
    except ValueError as exc:  # an integer beyond Python's int-str limit (4300 digits)
        raise SpecError(source, "", None,
                        "an integer in the file has too many digits (at most "
                        f"{MAX_DIGITS:,}): {str(exc).split(':')[0]}") from None
    except RecursionError:
        raise SpecError(source, "", None,
                        "TOML syntax error: arrays or tables nested too deeply") from None
    _refuse_other_kinds(document, source)
    root = Table(document, source, "")
    problem = root.table("problem")
    kind = Kind(problem.string("kind", "multiparty", choices=tuple(k.value for k in _PARSERS)))
    return _PARSERS[kind](root, problem, default_name)


# Top-level tables of dpverify's own files: problem files of every kind, mechanism files.
OWN_TABLES = ("problem", "observer", "party", "expect", "consumer", "round", "mechanism")


def file_kind(document: dict[str, Any]) -> str:
    """What a parsed TOML document is: `problem` (it has a [problem] table), `mechanism`
    (a [mechanism] table for `dpverify derive`), `foreign` (none of dpverify's tables, such
    as a pyproject.toml), or `incomplete` (some of a problem's tables, no [problem])."""
    if "problem" in document:
        return "problem"
    if "mechanism" in document:
        return "mechanism"
    if not any(name in document for name in OWN_TABLES):
        return "foreign"
    return "incomplete"


def _refuse_other_kinds(document: dict[str, Any], source: str) -> None:
    """A file that is not a problem file gets a message that says what it is."""
    kind = file_kind(document)
    if kind == "mechanism":
        raise SpecError(source, "", None, "a mechanism file ([mechanism] table), not a problem "
                        f"file: check it with `dpverify derive {source}`")
    if kind == "foreign":
        raise SpecError(source, "", None, "not a dpverify problem file (no [problem] table); "
                        "`dpverify new multiparty NAME` writes a template")


def _parse_multiparty(root: Table, problem: Table, default_name: str) -> MultipartySpec:
    file = root.file
    # Unknown keys first: a misspelt key is the likeliest cause of any later error.
    root.done(TOP_KEYS)
    problem.done(PROBLEM_KEYS)
    name = problem.string("name", default_name)
    description = problem.string("description", "")
    k = problem.integer("parties", minimum=1)
    if k > MAX_PARTIES:
        raise SizeLimitError(
            f"{file}: `{problem.key('parties')}` = {k}: too large: dpverify handles at most "
            f"{MAX_PARTIES:,} parties (symmetric functions; {MAX_GENERAL_PARTIES} otherwise)")
    lambdas, lambdas_exact, epsilons_exact = _privacy(problem, k)
    accuracies = _accuracies(problem)
    alphabets = read_alphabets(problem, k) if k <= MAX_GENERAL_PARTIES else (2,) * k

    agents = _agents(root, k, alphabets)
    if k > MAX_GENERAL_PARTIES:
        _symmetric_only(file, agents, k)
    expect = _expectations(root, agents) if root.has("expect") else ()

    spec = MultipartySpec(
        name=name, description=description, source=file, parties=k, lambdas=lambdas,
        lambdas_exact=lambdas_exact, epsilons_exact=epsilons_exact,
        accuracies=accuracies, agents=tuple(agents), expect=expect, alphabets=alphabets,
    )
    for agent in spec.agents:  # surface function and gain errors at load time, if cheap
        if k <= LOAD_TABULATE_PARTIES and spec.num_inputs <= LOAD_TABULATE_INPUTS:
            tabulate(spec, agent)
        elif is_count_function(agent.function):
            _check_count_function(spec, agent)
    return spec


def _check_count_function(spec: MultipartySpec, agent: AgentSpec) -> None:
    """F(0..k) (O(k) evaluations) and, while there are few, the gains of its values."""
    key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    try:
        values = count_values(agent.function, spec.parties)
    except ExpressionError as exc:
        raise SpecError(spec.source, key, agent.function.text, str(exc)) from None
    distinct = tuple(sorted(set(values)))
    outputs = agent.outputs if agent.outputs is not None else distinct
    if len(distinct) * len(outputs) <= LOAD_GAINS:
        gain_rows(agent, distinct, outputs, spec.source)


def _agents(root: Table, k: int, alphabets: tuple[int, ...] | None = None
            ) -> list[AgentSpec]:
    """The [observer] and the [[party]] tables, in this order (at least one; also for
    protocol files)."""
    agents: list[AgentSpec] = []
    if root.has("observer"):
        agents.append(_agent(root.table("observer"), 0, k, alphabets=alphabets))
    if root.has("party"):
        entries = root.get("party")
        if not isinstance(entries, list):
            raise root.error("party", entries, "must be an array of tables: write [[party]]")
        seen: set[int] = set()
        for n, entry in enumerate(entries):
            table = Table(entry, root.file, f"party[{n}]")
            table.done(("index",) + AGENT_KEYS)
            index = table.integer("index", minimum=1, maximum=k)
            if index in seen:
                raise table.error("index", index, "each party may appear once")
            seen.add(index)
            agents.append(_agent(table, index, k, extra=("index",), alphabets=alphabets))
    if not agents:
        raise SpecError(root.file, "", None,
                        "no agent: add an [observer] table or at least one [[party]]")
    return agents


def _symmetric_only(file: str, agents: list[AgentSpec], k: int) -> None:
    """Beyond MAX_GENERAL_PARTIES only functions that need no 2^k table are accepted."""
    for agent in agents:
        fn = agent.function
        if is_count_function(fn) or (fn.kind == "named" and fn.name == "bit"):
            continue
        what = "an expression that uses more than sum(x) and k" if fn.kind == "expr" else \
            f"a {fn.kind}"
        raise SizeLimitError(
            f"{file}: `{agent.key}.function`: {what} needs all 2^{k} inputs; beyond "
            f"{MAX_GENERAL_PARTIES} parties write a symmetric function: a name, "
            "{ counts = [F(0), ..., F(k)] }, or an expression in sum(x) and k")


def _per_party(problem: Table, name: str, k: int) -> list[tuple[Any, str]]:
    value = problem.get(name)
    if isinstance(value, list):
        if len(value) != k:
            raise problem.error(name, value, f"a list needs exactly {k} entries, one per party "
                                             f"(parties = {k}), or give a single number")
        return [(v, f"{problem.key(name)}[{i}]") for i, v in enumerate(value)]
    return [(value, problem.key(name))] * k


def _privacy(problem: Table, k: int):
    """epsilon_i >= 0 or lambda_i = e^epsilon_i >= 1 (theory.md section 1)."""
    has_eps, has_lam = problem.has("epsilon"), problem.has("lambda")
    if has_eps and has_lam:
        raise problem.error("lambda", problem.get("lambda"),
                            "give either `epsilon` or `lambda`, not both")
    if not has_eps and not has_lam:
        raise SpecError(problem.file, problem.key("epsilon"), None,
                        "is required: give `epsilon` (>= 0) or `lambda` (>= 1)")
    if has_eps:
        exact = []
        for value, key in _per_party(problem, "epsilon", k):
            eps = exact_number(problem, "epsilon", value, key=key)
            if eps < 0:
                raise SpecError(problem.file, key, value, "epsilon must be a number >= 0")
            if eps > 700:
                raise SpecError(problem.file, key, value,
                                "epsilon must be at most 700 (e^epsilon must be a finite float)")
            exact.append(eps)
        return tuple(math.exp(float(e)) for e in exact), None, tuple(exact)
    exact = []
    for value, key in _per_party(problem, "lambda", k):
        lam = exact_number(problem, "lambda", value, key=key)
        if lam < 1:
            raise SpecError(problem.file, key, value,
                            "lambda = e^epsilon must be a number >= 1")
        if lam > Fraction(10) ** 300:
            raise SpecError(problem.file, key, value, "lambda must be at most 1e300")
        exact.append(lam)
    return tuple(float(v) for v in exact), tuple(exact), None


def _accuracies(problem: Table) -> tuple[Accuracy, ...]:
    value = problem.get("accuracy", list(ACCURACIES))
    items = value if isinstance(value, list) else [value]
    allowed = '"average", "worst", or a list of them'
    if not items:
        raise problem.error("accuracy", value, f"must not be empty: {allowed}")
    out: list[Accuracy] = []
    for item in items:
        if item not in ACCURACIES:
            raise problem.error("accuracy", value, f"allowed: {allowed}")
        if Accuracy(item) not in out:
            out.append(Accuracy(item))
    return tuple(out)


def _agent(table: Table, party: int, k: int, extra: tuple[str, ...] = (),
           alphabets: tuple[int, ...] | None = None) -> AgentSpec:
    table.done(extra + AGENT_KEYS)
    function = (_function(table, k) if alphabets is None or is_binary(alphabets)
                else _symbol_function(table, alphabets))
    gain = _gain(table)
    outputs = _outputs(table) if table.has("outputs") else None
    return AgentSpec(party=party, function=function, gain=gain, outputs=outputs,
                     key=table.path)


def _function(table: Table, k: int) -> FunctionDef:
    value = table.get("function")
    key = table.key("function")
    allowed = ("a name (" + ", ".join(NAMED_FUNCTIONS) + "), { expr = \"...\" }, "
               "{ table = [...] } or { counts = [...] }")
    if isinstance(value, str):
        name, _, arg = value.partition(":")
        if name in ("threshold", "bit"):
            low = 1 if name == "bit" else 0
            if not _INTEGER_ARG.fullmatch(arg.strip()):
                raise SpecError(table.file, key, value,
                                f"write {name}:N with an integer N in {low}..{k}")
            param = int(arg)
            if not low <= param <= k:
                raise SpecError(table.file, key, value,
                                f"{name}:N needs {low} <= N <= {k} (parties = {k})")
            return FunctionDef(kind="named", name=name, param=param)
        if value in ("xor", "parity", "and", "or", "majority", "sum"):
            return FunctionDef(kind="named", name="xor" if value == "parity" else value)
        raise SpecError(table.file, key, value, f"unknown function; allowed: {allowed}")
    if isinstance(value, dict) and set(value) == {"expr"}:
        names = [f"x{i}" for i in range(1, k + 1)] + ["x", "k"]
        return FunctionDef(kind="expr", text=expression_text(table, value["expr"], key, names))
    if isinstance(value, dict) and set(value) == {"table"}:
        return FunctionDef(kind="table", values=_function_table(table, value["table"],
                                                                f"{key}.table", k))
    if isinstance(value, dict) and set(value) == {"counts"}:
        return FunctionDef(kind="counts", values=_counts(table, value["counts"],
                                                         f"{key}.counts", k))
    raise SpecError(table.file, key, value, f"allowed: {allowed}")


def _symbol_function(table: Table, alphabets: tuple[int, ...]) -> FunctionDef:
    """A function of symbols (some alphabet > 2): a name of spec/alphabet.py, an
    expression over x1..xk (each x_i in 0..m_i-1), or a table of prod m_i values."""
    value = table.get("function")
    key = table.key("function")
    k = len(alphabets)
    if isinstance(value, str):
        name, param = symbol_function(table, value, alphabets)
        return FunctionDef(kind="named", name=name, param=param)
    if isinstance(value, dict) and set(value) == {"expr"}:
        names = [f"x{i}" for i in range(1, k + 1)] + ["x", "k"]
        return FunctionDef(kind="expr", text=expression_text(table, value["expr"], key, names))
    if isinstance(value, dict) and set(value) == {"table"}:
        return FunctionDef(kind="table", values=_function_table(
            table, value["table"], f"{key}.table", k, alphabets))
    if isinstance(value, dict) and set(value) == {"counts"}:
        raise SpecError(table.file, f"{key}.counts", value["counts"],
                        "counts (the value at each number of ones) are for bits; with "
                        "alphabet > 2 write { expr = \"...\" } over sum(x), or a table")
    raise SpecError(table.file, key, value, 'allowed: a name, { expr = "..." } or '
                                            "{ table = [...] }")


def _counts(table: Table, value: object, key: str, k: int) -> tuple[Fraction, ...]:
    """`{ counts = [F(0), ..., F(k)] }`: the value at each number of ones."""
    if not isinstance(value, list) or len(value) != k + 1:
        raise SpecError(table.file, key, value,
                        f"must list k + 1 = {k + 1} values F(0), ..., F({k}): the value at "
                        "each number of ones")
    return tuple(exact_number(table, "", int(v) if isinstance(v, bool) else v,
                              key=f"{key}[{i}]", strings=False) for i, v in enumerate(value))


def _function_table(table: Table, value: object, key: str, k: int,
                    alphabets: tuple[int, ...] | None = None) -> tuple[Fraction, ...]:
    binary = alphabets is None or is_binary(alphabets)
    n = 1 << k if binary else len(input_symbols(alphabets or ()))
    size = f"2^{k} = {n}" if binary else f"prod m_i = {n}"
    strings = "bit strings" if binary else "input strings (the symbols, x1 first)"
    if isinstance(value, list):
        if len(value) != n:
            raise SpecError(table.file, key, value,
                            f"has {len(value)} values; a table needs {size} values in "
                            f"input order (x1 first), or a table of {strings} to values")
        items = [(v, f"{key}[{i}]") for i, v in enumerate(value)]
    elif isinstance(value, dict):
        expected = ([format(i, f"0{k}b") for i in range(n)] if binary
                    else input_names(alphabets or ()))
        missing = [x for x in expected if x not in value]
        unknown = [x for x in value if x not in set(expected)]
        if unknown:
            raise SpecError(table.file, key, unknown[0],
                            f"keys must be {strings} of length {k}, such as {expected[-1]!r}")
        if missing:
            raise SpecError(table.file, key, value,
                            f"every input must be listed: {missing[0]!r} is missing "
                            f"({len(missing)} of the {n} {strings} of length {k})")
        items = [(value[x], f"{key}.{x}") for x in expected]
    else:
        raise SpecError(table.file, key, value,
                        "must be a list of 2^k values or a table of bit strings to values"
                        if binary else f"must be a list of {n} values or a table of "
                        f"{strings} to values")
    out = []
    for v, item_key in items:
        if isinstance(v, bool):
            v = int(v)
        out.append(exact_number(table, "", v, key=item_key, strings=False))
    return tuple(out)


def _gain(table: Table) -> GainDef:
    value = table.get("gain", "indicator")
    key = table.key("gain")
    allowed = "allowed: " + ", ".join(NAMED_GAINS) + ', { expr = "..." } or { matrix = [[...]] }'
    if isinstance(value, str):
        if value not in NAMED_GAINS:
            raise SpecError(table.file, key, value, f"unknown gain; {allowed}")
        return GainDef(kind="named", name=value)
    if isinstance(value, dict) and set(value) == {"expr"}:
        return GainDef(kind="expr", text=expression_text(table, value["expr"], key, ["f", "y"]))
    if isinstance(value, dict) and set(value) == {"matrix"}:
        return GainDef(kind="matrix", matrix=_matrix(table, value["matrix"], f"{key}.matrix"))
    raise SpecError(table.file, key, value, allowed)


def _matrix(table: Table, value: object, key: str) -> tuple[tuple[Fraction, ...], ...]:
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise SpecError(table.file, key, value, "must be a non-empty list of rows (lists)")
    width = len(value[0])
    rows = []
    for r, row in enumerate(value):
        if len(row) != width:
            raise SpecError(table.file, f"{key}[{r}]", row,
                            f"ragged matrix: row {r} has {len(row)} entries, row 0 has {width}")
        rows.append(tuple(exact_number(table, "", v, key=f"{key}[{r}][{c}]")
                          for c, v in enumerate(row)))
    return tuple(rows)


def _outputs(table: Table) -> tuple[Fraction, ...]:
    value = table.get("outputs")
    key = table.key("outputs")
    if not isinstance(value, list) or not value:
        raise SpecError(table.file, key, value, "must be a non-empty list of numbers")
    out = [exact_number(table, "", v, key=f"{key}[{i}]", strings=False)
           for i, v in enumerate(value)]
    if len(set(out)) != len(out):
        raise SpecError(table.file, key, value, "outputs must be distinct")
    return tuple(out)


def _expectations(root: Table, agents: list[AgentSpec]) -> tuple[Expectation, ...]:
    expect = root.table("expect")
    expect.done(("observer", "party"))
    out: list[Expectation] = []
    names = {a.name for a in agents}

    def read(t: Table, agent: str) -> None:
        if agent not in names:
            raise SpecError(t.file, t.path, None,
                            f"no such agent in this problem; agents: {', '.join(sorted(names))}")
        t.done(ACCURACIES + ("verdict",))
        verdict = expected_verdict(t, EXPECTABLE_VERDICTS)
        for acc in t.data:
            if acc == "verdict":
                continue
            out.append(Expectation(agent=agent, accuracy=acc, value=expected_value(t, acc),
                                   verdict=verdict))

    if expect.has("observer"):
        read(expect.table("observer"), "observer")
    if expect.has("party"):
        parties = expect.table("party")
        for index in parties.data:
            if not re.fullmatch(r"[0-9]{1,9}", index):
                raise parties.error(index, parties.data[index],
                                    "write [expect.party.N] with the party's index N")
            read(parties.table(index), f"party:{int(index)}")
    return tuple(out)


def _parse_count(root: Table, problem: Table, default_name: str) -> CountSpec:
    from dpverify.spec.count_loader import parse_count  # lazy: count files only

    return parse_count(root, problem, default_name=default_name)


def _parse_protocol(root: Table, problem: Table, default_name: str) -> Any:
    from dpverify.spec.protocol_loader import parse_protocol  # lazy: protocol files only

    return parse_protocol(root, problem, default_name=default_name)  # a ProtocolSpec


# One parser per kind: the kind is dispatched here, once.
_PARSERS: dict[Kind, Callable[[Table, Table, str], MultipartySpec | CountSpec]] = {
    Kind.MULTIPARTY: _parse_multiparty, Kind.COUNT: _parse_count,
    Kind.PROTOCOL: _parse_protocol}
