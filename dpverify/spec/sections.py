"""The sections that several file kinds share, parsed once (docs/format.md): the privacy
levels (`epsilon` or `lambda` per party; a count's `alpha` or `epsilon`), the accuracies,
the agents (`[observer]`, `[[party]]`: functions, gains, outputs), the `[expect]` tables,
a count consumer (`[consumer]`) and the matrices inside them.

Every error is a SpecError naming the file, the key, the bad value and what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpverify.defaults import NAMED_GAINS
from dpverify.errors import SpecError
from dpverify.spec.alphabet import input_names, input_symbols, is_binary
from dpverify.spec.functions import BIT_NAMES, bit_function, symbol_function
from dpverify.spec.model import (
    EXPECTABLE_VERDICTS,
    Accuracy,
    AgentSpec,
    Expectation,
    FunctionDef,
    GainDef,
)
from dpverify.spec.numbers import NumberError, parse_exact
from dpverify.spec.reader import Table, exact_number, expression_text, type_name

if TYPE_CHECKING:  # a count consumer's model: imported by the count sections that use it
    from dpverify.spec.count_model import LossDef, Model

AGENT_KEYS = ("function", "gain", "outputs")
CONSUMER_KEYS = ("loss", "side_information", "model", "prior")
ACCURACIES = tuple(a.value for a in Accuracy)
# multi-party (and protocol) results may also expect `interaction-helps` (delta > 0: an
# interactive protocol beats RR(epsilon, delta); docs/theory.md, "Approximate privacy")
AGENT_VERDICTS = EXPECTABLE_VERDICTS + ("interaction-helps",)
MAX_TABLE_PARTIES = 22  # 2^22 entries: more than a file holds (4 MiB); 2^k is never built
MAX_EPSILON = 700  # e^epsilon (e^-epsilon) must stay a finite (positive) float


# -- privacy levels -------------------------------------------------------------------------
def _per_party(problem: Table, name: str, k: int) -> list[tuple[Any, str]]:
    value = problem.get(name)
    if isinstance(value, list):
        if len(value) != k:
            raise problem.error(name, value, f"a list needs exactly {k} entries, one per party "
                                             f"(parties = {k}), or give a single number")
        return [(v, f"{problem.key(name)}[{i}]") for i, v in enumerate(value)]
    return [(value, problem.key(name))] * k


def privacy_levels(problem: Table, k: int) -> tuple[tuple[float, ...],
                                                    tuple[Fraction, ...] | None,
                                                    tuple[Fraction, ...] | None]:
    """epsilon_i >= 0 or lambda_i = e^epsilon_i >= 1 (theory.md section 1): (lambdas as
    floats, lambdas exactly or None, epsilons exactly or None)."""
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
            if eps > MAX_EPSILON:
                raise SpecError(problem.file, key, value,
                                f"epsilon must be at most {MAX_EPSILON} (e^epsilon must be a "
                                "finite float)")
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


def deltas(problem: Table, k: int) -> tuple[Fraction, ...]:
    """`delta` (approximate privacy, KOV eq. 12): one number or a list of k, each in
    [0, 1), exact rationals allowed; 0 for every party when the key is absent."""
    if not problem.has("delta"):
        return (Fraction(0),) * k
    out = []
    for value, key in _per_party(problem, "delta", k):
        delta = exact_number(problem, "delta", value, key=key)
        if not 0 <= delta < 1:
            raise SpecError(problem.file, key, value,
                            "delta must be a number in [0, 1) (0: pure epsilon-DP)")
        out.append(delta)
    return tuple(out)


def count_delta(table: Table) -> Fraction:
    """A count's (or a mechanism's) `delta`: one number in [0, 1), exact rationals
    allowed; 0 (pure epsilon-DP) when absent. Every pair of adjacent answers is held to it
    (docs/theory.md, "Approximate privacy")."""
    if not table.has("delta"):
        return Fraction(0)
    value = table.get("delta")
    if isinstance(value, list):
        raise table.error("delta", value, "a count has one delta (a number in [0, 1)), not "
                                          "a list")
    delta = exact_number(table, "delta", value)
    if not 0 <= delta < 1:
        raise table.error("delta", value, "delta must be a number in [0, 1) (0: pure "
                                          "epsilon-DP)")
    return delta


def count_levels(table: Table) -> tuple[float, Fraction | None, Fraction | None]:
    """`epsilon` >= 0 or `alpha` = e^-epsilon in [0, 1] (GS Definition 2; theory.md 2).

    Returns (alpha as a float, alpha exactly or None, epsilon exactly or None).
    """
    has_eps, has_alpha = table.has("epsilon"), table.has("alpha")
    if has_eps and has_alpha:
        raise table.error("alpha", table.get("alpha"),
                          "give either `epsilon` or `alpha`, not both")
    if not has_eps and not has_alpha:
        raise SpecError(table.file, table.key("epsilon"), None,
                        "is required: give `epsilon` (>= 0) or `alpha` "
                        "(= e^-epsilon, in [0, 1])")
    if has_alpha:
        value = table.get("alpha")
        a = exact_number(table, "alpha", value)
        if not 0 <= a <= 1:
            raise table.error("alpha", value, "alpha = e^-epsilon must be a number in [0, 1]")
        return float(a), a, None
    value = table.get("epsilon")
    eps = exact_number(table, "epsilon", value)
    if eps < 0:
        raise table.error("epsilon", value, "epsilon must be a number >= 0")
    if eps > MAX_EPSILON:
        raise table.error("epsilon", value,
                          f"epsilon must be at most {MAX_EPSILON} (give alpha = 0 for no "
                          "privacy at all)")
    alpha_exact = Fraction(1) if eps == 0 else None
    return math.exp(-float(eps)), alpha_exact, eps


# -- accuracies -------------------------------------------------------------------------------
def accuracies(problem: Table) -> tuple[Accuracy, ...]:
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


# -- agents -----------------------------------------------------------------------------------
def agents(root: Table, k: int, alphabets: tuple[int, ...] | None = None
           ) -> list[AgentSpec]:
    """The [observer] and the [[party]] tables, in this order (at least one; also for
    protocol files)."""
    out: list[AgentSpec] = []
    if root.has("observer"):
        out.append(_agent(root.table("observer"), 0, k, alphabets=alphabets))
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
            out.append(_agent(table, index, k, extra=("index",), alphabets=alphabets))
    if not out:
        raise SpecError(root.file, "", None,
                        "no agent: add an [observer] table or at least one [[party]]")
    return out


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
    allowed = ("a name (" + ", ".join(BIT_NAMES) + "), { expr = \"...\" }, "
               "{ table = [...] } or { counts = [...] }")
    if isinstance(value, str):
        named = bit_function(table, value, k)
        if named is None:
            raise SpecError(table.file, key, value, f"unknown function; allowed: {allowed}")
        return FunctionDef(kind="named", name=named[0], param=named[1])
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
    """A function of symbols (some alphabet > 2): a name of spec/functions.py, an
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
    if binary and k > MAX_TABLE_PARTIES:
        raise SpecError(table.file, key, None, f"a table lists all 2^{k} inputs: tables are "
                        f"read for at most {MAX_TABLE_PARTIES} parties; for {k} parties write "
                        "a symmetric function (a name, { counts = [F(0), ..., F(k)] }, or "
                        "an expression in sum(x) and k)")
    n = 1 << k if binary else len(input_symbols(alphabets or ()))
    size = f"2^{k} = {n:,}" if binary else f"prod m_i = {n:,}"
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


# A count consumer's loss named as a multi-party gain: the gain is its negation.
LOSS_AS_GAIN = {"abs": "-|f - y|", "square": "-(f - y)^2"}


def _gain(table: Table) -> GainDef:
    value = table.get("gain", "indicator")
    key = table.key("gain")
    allowed = "allowed: " + ", ".join(NAMED_GAINS) + ', { expr = "..." } or { matrix = [[...]] }'
    if isinstance(value, str):
        if value not in NAMED_GAINS:
            hint = (f'; did you mean "-{value}" (the gain {LOSS_AS_GAIN[value]}: gains '
                    "are maximised)?" if value in LOSS_AS_GAIN else "")
            raise SpecError(table.file, key, value, f"unknown gain; {allowed}{hint}")
        return GainDef(kind="named", name=value)
    if isinstance(value, dict) and set(value) == {"expr"}:
        return GainDef(kind="expr", text=expression_text(table, value["expr"], key, ["f", "y"]))
    if isinstance(value, dict) and set(value) == {"matrix"}:
        return GainDef(kind="matrix", matrix=number_matrix(table, value["matrix"], f"{key}.matrix"))
    raise SpecError(table.file, key, value, allowed)


def number_matrix(table: Table, value: object, key: str) -> tuple[tuple[Fraction, ...], ...]:
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


# -- [expect] ---------------------------------------------------------------------------------
def expectations(root: Table, agents: list[AgentSpec]) -> tuple[Expectation, ...]:
    """The `[expect.observer]` and `[expect.party.N]` tables of a multi-party (or
    protocol) file, for the agents it defines."""
    expect = root.table("expect")
    expect.done(("observer", "party"))
    out: list[Expectation] = []
    names = {a.name for a in agents}

    def read(t: Table, agent: str) -> None:
        if agent not in names:
            raise SpecError(t.file, t.path, None,
                            f"no such agent in this problem; agents: {', '.join(sorted(names))}")
        t.done(ACCURACIES + ("verdict",))
        out.extend(_expected(t, agent, choices=AGENT_VERDICTS))

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


def count_expectations(root: Table, model: str) -> tuple[Expectation, ...]:
    """The `[expect.consumer]` table of a count problem whose consumer's model is `model`."""
    from dpverify.spec.count_model import MODELS

    expect = root.table("expect")
    expect.done(("consumer",))
    if not expect.has("consumer"):
        return ()
    t = expect.table("consumer")

    def check(key: str) -> None:
        if key not in MODELS:
            raise t.error(key, t.data[key], "allowed keys: minimax, bayes, verdict")
        if key != model:
            raise t.error(key, t.data[key],
                          f"this problem's model is '{model}': write `{model} = ...`")

    return tuple(_expected(t, "consumer", check))


def _expected(t: Table, agent: str, check: Callable[[str], None] | None = None,
              choices: tuple[str, ...] = EXPECTABLE_VERDICTS) -> list[Expectation]:
    """One `[expect.<agent>]` table: its verdict (default optimal, one of `choices`) and a
    value per key (each key first passed to `check`)."""
    verdict = expected_verdict(t, choices)
    out = []
    for key in t.data:
        if key == "verdict":
            continue
        if check is not None:
            check(key)
        out.append(Expectation(agent=agent, accuracy=key, value=expected_value(t, key),
                               verdict=verdict))
    return out


def expected_verdict(table: Table, choices: tuple[str, ...]) -> str:
    """The optional `verdict` key of an `[expect.<agent>]` table (default "optimal")."""
    verdict = table.string("verdict", "optimal", choices=choices)
    if verdict != "optimal" and len([k for k in table.data if k != "verdict"]) == 0:
        raise table.error("verdict", verdict,
                          "give the expected value too (e.g. `average = ...`) beside `verdict`")
    return verdict


def expected_value(table: Table, name: str) -> float:
    """An `[expect]` value: a finite number, or an exact rational "p/q" string."""
    value = table.get(name)
    allowed = 'must be a finite number or an exact rational "p/q"'
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise table.error(name, value, f"{allowed}, not {type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise table.error(name, value, allowed)
    try:
        return _finite_float(parse_exact(value))
    except NumberError:
        raise table.error(name, value, f"{allowed}, not {type_name(value)}") from None
    except OverflowError:
        raise table.error(name, value, f"{allowed} (at most about 1e308)") from None


def _finite_float(value: Fraction) -> float:
    out = float(value)
    if not math.isfinite(out):
        raise OverflowError
    return out


# -- a count consumer ------------------------------------------------------------------------
def consumer_table(consumer: Table, n: int
                   ) -> tuple[LossDef, tuple[int, ...], Model, tuple[Fraction, ...] | None]:
    """A `[consumer]` table of answers 0..n: (loss, side information, model, prior)."""
    from dpverify.spec.count_model import MODELS, Model

    consumer.done(CONSUMER_KEYS)
    loss = _loss(consumer, n)
    side = _side_information(consumer, n)
    model = Model(consumer.string("model", "minimax", choices=MODELS))
    prior = _prior(consumer, n, side) if model == "bayes" else None
    if model != "bayes" and consumer.has("prior"):
        raise consumer.error("prior", consumer.get("prior"),
                             'a prior is used only with model = "bayes"')
    return loss, side, model, prior


def _loss(consumer: Table, n: int) -> LossDef:
    from dpverify.spec.count_model import NAMED_LOSSES, LossDef
    from dpverify.spec.losses import LOSS_NAMES

    value = consumer.get("loss")
    key = consumer.key("loss")
    allowed = ("allowed: " + ", ".join(NAMED_LOSSES) + ', { expr = "..." } over i, r and n, '
               f"or {{ matrix = [[...]] }} with {n + 1} rows of {n + 1} entries")
    if isinstance(value, str):
        if value not in NAMED_LOSSES:
            raise SpecError(consumer.file, key, value, f"unknown loss; {allowed}")
        return LossDef(kind="named", name=value)
    if isinstance(value, dict) and set(value) == {"expr"}:
        return LossDef(kind="expr", text=expression_text(consumer, value["expr"], key,
                                                         LOSS_NAMES))
    if isinstance(value, dict) and set(value) == {"matrix"}:
        rows = square_matrix(consumer, value["matrix"], f"{key}.matrix", n)
        return LossDef(kind="matrix", matrix=rows)
    raise SpecError(consumer.file, key, value, allowed)


def square_matrix(table: Table, value: object, key: str, n: int
                   ) -> tuple[tuple[Fraction, ...], ...]:
    """An (n+1) x (n+1) matrix of exact numbers ("p/q" strings allowed)."""
    size = n + 1
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise SpecError(table.file, key, value,
                        f"must be a list of {size} rows, each a list of {size} numbers")
    if len(value) != size:
        raise SpecError(table.file, key, f"{len(value)} rows",
                        f"needs n + 1 = {size} rows (one per true answer 0..{n})")
    rows = []
    for i, row in enumerate(value):
        if len(row) != size:
            raise SpecError(table.file, f"{key}[{i}]", f"{len(row)} entries",
                            f"every row needs n + 1 = {size} entries (one per released "
                            f"answer 0..{n})")
        rows.append(tuple(exact_number(table, "", v, key=f"{key}[{i}][{r}]")
                          for r, v in enumerate(row)))
    return tuple(rows)


def _side_information(consumer: Table, n: int) -> tuple[int, ...]:
    """S: an inclusive range [a, b] or { set = [...] }; default all of 0..n (GS 2.2)."""
    if not consumer.has("side_information"):
        return tuple(range(n + 1))
    value = consumer.get("side_information")
    key = consumer.key("side_information")
    allowed = (f"allowed: an inclusive range [a, b] with 0 <= a <= b <= {n}, "
               f"or {{ set = [...] }} of distinct answers in 0..{n}")

    def answer(v: object, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(consumer.file, where, v,
                            f"must be an integer answer in 0..{n}, not {type_name(v)}")
        if not 0 <= v <= n:
            raise SpecError(consumer.file, where, v, f"must be an answer in 0..{n} (n = {n})")
        return v

    if isinstance(value, list):
        if len(value) != 2:
            raise SpecError(consumer.file, key, value,
                            f"a range is a list of two integers [a, b]; {allowed}")
        a = answer(value[0], f"{key}[0]")
        b = answer(value[1], f"{key}[1]")
        if a > b:
            raise SpecError(consumer.file, key, value, f"the range [a, b] needs a <= b; "
                                                       f"{allowed}")
        return tuple(range(a, b + 1))
    if isinstance(value, dict) and set(value) == {"set"}:
        items = value["set"]
        if not isinstance(items, list) or not items:
            raise SpecError(consumer.file, f"{key}.set", items,
                            f"must be a non-empty list of answers in 0..{n}")
        out = [answer(v, f"{key}.set[{j}]") for j, v in enumerate(items)]
        if len(set(out)) != len(out):
            raise SpecError(consumer.file, f"{key}.set", items, "answers must be distinct")
        return tuple(sorted(out))
    raise SpecError(consumer.file, key, value, allowed)


UNIFORM_PRIOR = "uniform"  # a Bayes consumer's prior: equal weights on side_information


def _prior(consumer: Table, n: int, side: tuple[int, ...]) -> tuple[Fraction, ...]:
    """n+1 non-negative weights, normalised exactly (GRS); zero outside S."""
    if not consumer.has("prior"):
        raise SpecError(consumer.file, consumer.key("prior"), None,
                        f'is required with model = "bayes": "{UNIFORM_PRIOR}" (equal '
                        f"weights on the side information) or a list of n + 1 = {n + 1} "
                        "non-negative weights (normalised for you)")
    value = consumer.get("prior")
    key = consumer.key("prior")
    if value == UNIFORM_PRIOR:  # equal weights on the side information, 0 outside it
        inside = set(side)
        return tuple(Fraction(int(i in inside), len(inside)) for i in range(n + 1))
    if not isinstance(value, list) or len(value) != n + 1:
        shown = f"{len(value)} weights" if isinstance(value, list) else value
        raise SpecError(consumer.file, key, shown,
                        f'must be "{UNIFORM_PRIOR}" or a list of n + 1 = {n + 1} '
                        f"non-negative weights, one per answer 0..{n}")
    weights = []
    for i, v in enumerate(value):
        w = exact_number(consumer, "", v, key=f"{key}[{i}]")
        if w < 0:
            raise SpecError(consumer.file, f"{key}[{i}]", v, "weights must be >= 0")
        weights.append(w)
    total = sum(weights, Fraction(0))
    if total == 0:
        raise SpecError(consumer.file, key, value, "the weights must not all be 0")
    inside = set(side)
    for i, w in enumerate(weights):
        if w and i not in inside:
            raise SpecError(consumer.file, f"{key}[{i}]", value[i],
                            f"answer {i} is outside side_information, so its weight must "
                            "be 0 (side information says the answer is never there)")
    return tuple(w / total for w in weights)
