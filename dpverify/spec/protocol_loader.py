"""Protocol files (`kind = "protocol"`) -> a validated ProtocolSpec (docs/format.md).

`[problem]` is that of a multi-party file (its `epsilon` / `lambda` are the levels the
protocol claims), then `[[round]]` tables in order, then the agents. Every error is a
SpecError naming the file, the key, the bad value and what is allowed; unknown keys are
refused; the number of transcripts is bounded before any kernel is read.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from dpverify.errors import SpecError
from dpverify.spec.alphabet import read_alphabets
from dpverify.spec.multiparty_loader import LOAD_TABULATE_PARTIES, PROBLEM_KEYS
from dpverify.spec.numbers import STOCHASTIC_TOL
from dpverify.spec.protocol_model import (
    DEFAULT_KEY,
    MAX_CELLS,
    MAX_PROTOCOL_PARTIES,
    MAX_TRANSCRIPTS,
    Kernel,
    ProtocolSpec,
    RoundSpec,
    prefix_key,
    uncovered_prefix,
)
from dpverify.spec.reader import Table, exact_number, type_name
from dpverify.spec.sections import accuracies, agents, deltas, expectations, privacy_levels
from dpverify.spec.tables import tabulate

TOP_KEYS = ("problem", "round", "observer", "party", "expect")
ROUND_KEYS = ("party", "messages", "kernel")
_MESSAGE = re.compile(r"[0-9]{1,6}")


def parse_protocol(root: Table, problem: Table, *, default_name: str) -> ProtocolSpec:
    """The tables of a protocol file -> a ProtocolSpec."""
    file = root.file
    root.done(TOP_KEYS)  # a misspelt key is the likeliest cause of any later error
    problem.done(PROBLEM_KEYS)  # the keys of a multi-party file's [problem]
    name = problem.string("name", default_name)
    description = problem.string("description", "")
    k = problem.integer("parties", minimum=1, maximum=MAX_PROTOCOL_PARTIES)
    lambdas, lambdas_exact, epsilons_exact = privacy_levels(problem, k)
    levels_delta = deltas(problem, k)
    chosen = accuracies(problem)
    alphabets = read_alphabets(problem, k)  # input symbols per party (default: bits)
    rounds, exact = _rounds(root, k, alphabets)
    agent_specs = tuple(agents(root, k, alphabets))
    expect = expectations(root, list(agent_specs)) if root.has("expect") else ()
    missing = uncovered_prefix(rounds, alphabets)
    if missing is not None:
        r, prefix = missing
        raise SpecError(file, f"round[{r}].kernel", None,
                        f'no kernel for the prefix "{prefix_key(prefix)}" (the messages so '
                        "far), which the protocol reaches: add it, or a \"*\" default")
    spec = ProtocolSpec(
        name=name, description=description, source=file, parties=k, lambdas=lambdas,
        lambdas_exact=lambdas_exact, epsilons_exact=epsilons_exact, accuracies=chosen,
        agents=agent_specs, rounds=rounds, alphabets=alphabets, exact=exact, expect=expect,
        deltas=levels_delta)
    if k <= LOAD_TABULATE_PARTIES:
        for agent in spec.agents:  # surface table and gain errors at load time
            tabulate(spec.claimed(), agent)
    return spec


def _rounds(root: Table, k: int, alphabets: tuple[int, ...]) -> tuple[tuple[RoundSpec, ...],
                                                                      bool]:
    """The [[round]] tables, and whether every kernel entry is exact (no TOML float)."""
    if not root.has("round"):
        raise SpecError(root.file, "round", None,
                        "is required: one [[round]] table per round, in order, with `party`, "
                        "`messages` and `kernel`")
    entries = root.get("round")
    if not isinstance(entries, list) or not entries:
        raise root.error("round", entries, "must be a non-empty array of tables: write "
                                           "[[round]]")
    rounds: list[RoundSpec] = []
    sizes: list[int] = []
    exact = True
    transcripts = 1
    inputs = 1
    for m in alphabets:
        inputs *= m
    for r, entry in enumerate(entries):
        table = Table(entry, root.file, f"round[{r}]")
        table.done(ROUND_KEYS)
        party = table.integer("party", minimum=1, maximum=k)
        messages = table.integer("messages", minimum=1, maximum=MAX_TRANSCRIPTS)
        transcripts *= messages
        if transcripts > MAX_TRANSCRIPTS or transcripts * inputs > MAX_CELLS:
            raise table.error("messages", messages, (
                f"too many transcripts: rounds 0..{r} already give {transcripts:,} (the "
                f"product of their `messages`); at most {MAX_TRANSCRIPTS:,} transcripts and "
                f"{MAX_CELLS:,} (inputs x transcripts) are allowed"))
        kernels, floats = _kernels(table, r, alphabets[party - 1], messages, sizes)
        exact = exact and not floats
        rounds.append(RoundSpec(party=party, messages=messages, kernels=kernels,
                                key=table.path))
        sizes.append(messages)
    return tuple(rounds), exact


def _kernels(table: Table, r: int, rows: int, messages: int, sizes: list[int]
             ) -> tuple[tuple[tuple[str, Kernel], ...], bool]:
    """A round's kernels: one matrix (the default of every prefix), or a table of matrices
    keyed by prefix. Returns them and whether a TOML float was used."""
    value = table.get("kernel")
    key = table.key("kernel")
    if isinstance(value, list):
        kernel, floats = _matrix(table, value, key, rows, messages)
        return ((DEFAULT_KEY, kernel),), floats
    if not isinstance(value, dict) or not value:
        raise SpecError(table.file, key, value, (
            f"must be a matrix ({rows} rows of {messages} entries: row b is the message's "
            "distribution when the speaker's input is b) or a table of such matrices keyed "
            'by the earlier messages joined with "," ("" in the first round, "*" the default)'))
    out: dict[str, Kernel] = {}
    any_float = False
    for raw, matrix in value.items():
        canonical = _prefix(table, key, raw, r, sizes)
        if canonical in out:
            raise SpecError(table.file, f'{key}."{raw}"', matrix,
                            f'the same prefix as "{canonical}", given twice')
        out[canonical], floats = _matrix(table, matrix, f'{key}."{raw}"', rows, messages)
        any_float = any_float or floats
    return tuple(out.items()), any_float


def _prefix(table: Table, key: str, raw: str, r: int, sizes: list[int]) -> str:
    """A kernel key -> its canonical form ("0,1"), or "*"; a SpecError otherwise."""
    if raw.strip() == DEFAULT_KEY:
        return DEFAULT_KEY
    example = ",".join(["0"] * r)
    allowed = (f'a key is "*" or the {r} earlier message{"s" if r != 1 else ""} joined with '
               f'"," (such as "{example}")')
    parts = [p.strip() for p in raw.split(",")] if raw.strip() else []
    if len(parts) != r or not all(_MESSAGE.fullmatch(p) for p in parts):
        raise SpecError(table.file, f'{key}."{raw}"', None, f"not a prefix of round {r}: "
                        f"{allowed}")
    messages = [int(p) for p in parts]
    for j, (m, size) in enumerate(zip(messages, sizes, strict=True)):
        if m >= size:
            raise SpecError(table.file, f'{key}."{raw}"', None,
                            f"message {m} of round {j} does not exist: round {j} has "
                            f"messages 0..{size - 1}")
    return ",".join(str(m) for m in messages)


def _matrix(table: Table, value: Any, key: str, rows: int, messages: int
            ) -> tuple[Kernel, bool]:
    """A kernel matrix: `rows` distributions over `messages` messages ("p/q" allowed)."""
    shape = f"{rows} rows (one per input symbol of the speaker) of {messages} entries"
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise SpecError(table.file, key, value, f"must be a matrix: {shape}")
    if len(value) != rows:
        raise SpecError(table.file, key, f"{len(value)} rows", f"a kernel has {shape}")
    out = []
    floats = False
    for b, row in enumerate(value):
        where = f"{key}[{b}]"
        if len(row) != messages:
            raise SpecError(table.file, where, f"{len(row)} entries",
                            f"a kernel row has one entry per message ({messages})")
        entries = []
        for m, v in enumerate(row):
            if isinstance(v, bool):
                raise SpecError(table.file, f"{where}[{m}]", v,
                                f'must be a probability (a number or "p/q"), not '
                                f"{type_name(v)}")
            x = exact_number(table, "", v, key=f"{where}[{m}]")
            if x < 0:
                raise SpecError(table.file, f"{where}[{m}]", v, "probabilities must be >= 0")
            entries.append(x)
        row_floats = any(isinstance(v, float) for v in row)
        floats = floats or row_floats
        total = sum(entries, Fraction(0))
        if (abs(total - 1) > STOCHASTIC_TOL) if row_floats else total != 1:
            shown = str(total) if not row_floats else f"{float(total):.17g}"
            raise SpecError(table.file, where, row, (
                f"row {b} is the message's distribution when the speaker's input is {b}: "
                f"it must sum to 1{'' if not row_floats else f' (within {STOCHASTIC_TOL:g})'}"
                f", not {shown}"))
        out.append(tuple(entries))
    return tuple(out), floats
