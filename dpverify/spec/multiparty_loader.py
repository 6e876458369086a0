"""Multi-party problem files (`kind = "multiparty"`, the default) -> a validated
MultipartySpec (spec.md is the contract; docs/format.md the format).

`[problem]` (name, parties, privacy levels, accuracies, alphabets), the agents, `[expect]`:
the sections are parsed by spec/sections.py, shared with protocol files.
"""

from __future__ import annotations

from dpverify.errors import SizeLimitError, SpecError, shown
from dpverify.spec.alphabet import read_alphabets
from dpverify.spec.counts import count_values, is_count_function
from dpverify.spec.expr import ExpressionError
from dpverify.spec.model import AgentSpec, MultipartySpec
from dpverify.spec.reader import Table
from dpverify.spec.sections import accuracies, agents, deltas, expectations, privacy_levels
from dpverify.spec.tables import gain_rows, tabulate

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
PROBLEM_KEYS = ("name", "description", "kind", "parties", "epsilon", "lambda", "delta",
                "accuracy", "alphabet")
TOP_KEYS = ("problem", "observer", "party", "expect")


# Keys of a count-query file (spec/count_loader.py) that a multi-party file does not have:
# a file that uses them and omits `kind` is most likely a count problem.
COUNT_ONLY_KEYS = (("consumer", ""), ("n", "problem"), ("alpha", "problem"))


def _count_without_kind(root: Table, problem: Table) -> None:
    """A count-query file without `kind = "count"` (read as multi-party, the default):
    one line naming the key and `kind`, rather than "unknown key"."""
    if problem.has("kind"):
        return
    for name, table in COUNT_ONLY_KEYS:
        where = problem if table else root
        if where.has(name):
            raise SpecError(root.file, where.key(name), where.data[name],
                            'a count-query key, but this file has no `problem.kind`, so it '
                            'is read as a multi-party problem; add kind = "count" to '
                            "[problem] (docs/format.md, \"Count problem files\")")


def parse_multiparty(root: Table, problem: Table, *, default_name: str) -> MultipartySpec:
    """The tables of a multi-party problem file -> a MultipartySpec."""
    file = root.file
    # Unknown keys first: a misspelt key is the likeliest cause of any later error.
    _count_without_kind(root, problem)
    root.done(TOP_KEYS)
    problem.done(PROBLEM_KEYS)
    name = problem.string("name", default_name)
    description = problem.string("description", "")
    k = problem.integer("parties", minimum=1)
    if k > MAX_PARTIES:
        raise SizeLimitError(
            f"{file}: `{problem.key('parties')}` = {shown(k)}: too large: dpverify handles "
            f"at most {MAX_PARTIES:,} parties (symmetric functions; {MAX_GENERAL_PARTIES} "
            "otherwise)")
    lambdas, lambdas_exact, epsilons_exact = privacy_levels(problem, k)
    levels_delta = deltas(problem, k)
    chosen = accuracies(problem)
    alphabets = read_alphabets(problem, k) if k <= MAX_GENERAL_PARTIES else (2,) * k

    agent_specs = agents(root, k, alphabets)
    if k > MAX_GENERAL_PARTIES:
        _symmetric_only(file, agent_specs, k)
    expect = expectations(root, agent_specs) if root.has("expect") else ()

    spec = MultipartySpec(
        name=name, description=description, source=file, parties=k, lambdas=lambdas,
        lambdas_exact=lambdas_exact, epsilons_exact=epsilons_exact,
        accuracies=chosen, agents=tuple(agent_specs), expect=expect, alphabets=alphabets,
        deltas=levels_delta,
    )
    for agent in spec.agents:  # surface function and gain errors at load time, if cheap
        if k <= LOAD_TABULATE_PARTIES and spec.num_inputs <= LOAD_TABULATE_INPUTS:
            tabulate(spec, agent)
        elif spec.binary and is_count_function(agent.function):  # counts are of bits
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
