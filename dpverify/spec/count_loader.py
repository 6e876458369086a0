"""Count-query problem files (`kind = "count"`) and mechanism files for `dpverify derive`.

spec.md is the contract. Every error is a SpecError naming the file, the key, the bad value
and what is allowed; unknown keys are refused; expressions go through the safe evaluator.
"""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction
from pathlib import Path

from dpverify.errors import SpecError
from dpverify.spec.count_model import (
    MODELS,
    NAMED_LOSSES,
    CountSpec,
    LossDef,
    MechanismSpec,
    Model,
)
from dpverify.spec.losses import LOSS_NAMES
from dpverify.spec.model import EXPECTABLE_VERDICTS, Expectation
from dpverify.spec.reader import (
    Table,
    exact_number,
    expected_value,
    expected_verdict,
    expression_text,
    read_text,
    type_name,
)

__all__ = ["CountSpec", "MechanismSpec", "load_mechanism", "loads_mechanism",
           "parse_consumer", "parse_count", "parse_mechanism"]

PROBLEM_KEYS = ("name", "description", "kind", "n", "epsilon", "alpha")
CONSUMER_KEYS = ("loss", "side_information", "model", "prior")
MECHANISM_KEYS = ("name", "description", "alpha", "epsilon", "matrix")
MAX_N = 5000  # answers 0..n; the LP size guard refuses far smaller n by default
MAX_TABULATED_N = 150  # tabulate (and so validate) the loss at load time up to this n
MAX_EPSILON = 700  # e^-epsilon must stay a positive float
STOCHASTIC_TOL = 1e-9  # rows of a mechanism given with floats must sum to 1 within this


# --------------------------------------------------------------------------------------
# Problem files


def parse_count(root: Table, problem: Table, *, default_name: str) -> CountSpec:
    """The `[problem]` and `[consumer]` tables of a count problem -> a CountSpec."""
    file = root.file
    # Unknown keys first: a misspelt key (`alpa`, `[consumr]`) is the likeliest cause of
    # any later error, so it is named before "epsilon is required" could hide it.
    root.done(("problem", "consumer", "expect"))
    problem.done(PROBLEM_KEYS)
    name = problem.string("name", default_name)
    description = problem.string("description", "")
    problem.string("kind", "count")
    n = problem.integer("n", minimum=0, maximum=MAX_N)
    alpha, alpha_exact, epsilon_exact = privacy(problem)

    if not root.has("consumer"):
        raise SpecError(file, "consumer", None,
                        "is required: a [consumer] table with `loss` (and optionally "
                        "side_information, model, prior)")
    loss, side, model, prior = parse_consumer(root.table("consumer"), n)
    expect = _expectations(root, model) if root.has("expect") else ()

    spec = CountSpec(name=name, description=description, source=file, n=n, alpha=alpha,
                     alpha_exact=alpha_exact, epsilon_exact=epsilon_exact, loss=loss,
                     side_information=side, model=model, prior=prior, expect=expect)
    if n <= MAX_TABULATED_N:
        from dpverify.spec.losses import loss_table

        loss_table(spec)  # surface expression errors at load time
    return spec


def parse_consumer(consumer: Table, n: int
                   ) -> tuple[LossDef, tuple[int, ...], Model, tuple[Fraction, ...] | None]:
    """A `[consumer]` table of answers 0..n: (loss, side information, model, prior)."""
    consumer.done(CONSUMER_KEYS)
    loss = _loss(consumer, n)
    side = _side_information(consumer, n)
    model = Model(consumer.string("model", "minimax", choices=MODELS))
    prior = _prior(consumer, n, side) if model == "bayes" else None
    if model != "bayes" and consumer.has("prior"):
        raise consumer.error("prior", consumer.get("prior"),
                             'a prior is used only with model = "bayes"')
    return loss, side, model, prior


def privacy(table: Table) -> tuple[float, Fraction | None, Fraction | None]:
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


def _loss(consumer: Table, n: int) -> LossDef:
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
        rows = _square_matrix(consumer, value["matrix"], f"{key}.matrix", n)
        return LossDef(kind="matrix", matrix=rows)
    raise SpecError(consumer.file, key, value, allowed)


def _square_matrix(table: Table, value: object, key: str, n: int
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


def _prior(consumer: Table, n: int, side: tuple[int, ...]) -> tuple[Fraction, ...]:
    """n+1 non-negative weights, normalised exactly (GRS); zero outside S."""
    if not consumer.has("prior"):
        raise SpecError(consumer.file, consumer.key("prior"), None,
                        f'is required with model = "bayes": a list of n + 1 = {n + 1} '
                        "non-negative weights (normalised for you)")
    value = consumer.get("prior")
    key = consumer.key("prior")
    if not isinstance(value, list) or len(value) != n + 1:
        shown = f"{len(value)} weights" if isinstance(value, list) else value
        raise SpecError(consumer.file, key, shown,
                        f"must be a list of n + 1 = {n + 1} non-negative weights, one per "
                        f"answer 0..{n}")
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


def _expectations(root: Table, model: str) -> tuple[Expectation, ...]:
    expect = root.table("expect")
    expect.done(("consumer",))
    out: list[Expectation] = []
    if expect.has("consumer"):
        t = expect.table("consumer")
        verdict = expected_verdict(t, EXPECTABLE_VERDICTS)
        for acc in t.data:
            if acc == "verdict":
                continue
            if acc not in MODELS:
                raise t.error(acc, t.data[acc], "allowed keys: minimax, bayes, verdict")
            if acc != model:
                raise t.error(acc, t.data[acc],
                              f"this problem's model is '{model}': write `{model} = ...`")
            out.append(Expectation(agent="consumer", accuracy=acc,
                                   value=expected_value(t, acc), verdict=verdict))
    return tuple(out)


# --------------------------------------------------------------------------------------
# Mechanism files (`dpverify derive FILE`)


def load_mechanism(path: str | Path) -> MechanismSpec:
    """Read and validate a mechanism file (a `[mechanism]` table; see `dpverify derive`)."""
    return loads_mechanism(read_text(path), source=str(path), default_name=Path(path).stem)


def loads_mechanism(text: str, *, source: str = "<string>",
                    default_name: str = "mechanism") -> MechanismSpec:
    """A `[mechanism]` table: `alpha` (or `epsilon`) and an (n+1) x (n+1) row-stochastic
    `matrix` (rows: true answers, columns: released answers; "p/q" strings allowed)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "", None, f"TOML syntax error: {exc}") from None
    root = Table(document, source, "")
    if "problem" in document and "mechanism" not in document:
        raise SpecError(source, "mechanism", None, "is required: this is a problem file "
                        f"([problem] table), not a mechanism file: `dpverify verify {source}`")
    if not root.has("mechanism"):
        raise SpecError(source, "mechanism", None,
                        "is required: a [mechanism] table with `alpha` (or `epsilon`) and "
                        "`matrix`")
    table = root.table("mechanism")
    root.done(("mechanism",))
    return parse_mechanism(table, default_name=default_name)


def parse_mechanism(table: Table, *, default_name: str) -> MechanismSpec:
    """A `[mechanism]` table -> a MechanismSpec (also read by `dpverify audit`, beside a
    `[consumer]` table: dpverify.spec.mechanism_audit)."""
    source = table.file
    table.done(MECHANISM_KEYS)
    name = table.string("name", default_name)
    description = table.string("description", "")
    alpha, alpha_exact, epsilon_exact = privacy(table)
    value = table.get("matrix")
    key = table.key("matrix")
    if not isinstance(value, list) or not value:
        raise SpecError(source, key, value,
                        "must be a non-empty list of rows: an (n+1) x (n+1) row-stochastic "
                        "matrix (rows: true answers, columns: released answers)")
    if len(value) > MAX_N + 1:
        raise SpecError(source, key, f"{len(value)} rows", f"at most {MAX_N + 1} rows")
    n = len(value) - 1
    rows = _square_matrix(table, value, key, n)
    floats = any(isinstance(v, float) for row in value for v in row)
    exact = alpha_exact is not None and not floats
    for i, row in enumerate(rows):
        for r, v in enumerate(row):
            if v < 0:
                raise SpecError(source, f"{key}[{i}][{r}]", value[i][r],
                                "probabilities must be >= 0")
        total = sum(row, Fraction(0))
        if (total != 1) if exact else abs(total - 1) > STOCHASTIC_TOL:
            raise SpecError(source, f"{key}[{i}]", f"sum {float(total):.17g}",
                            "every row is a probability distribution and must sum to 1"
                            + ("" if exact else f" (within {STOCHASTIC_TOL:g})"))
    return MechanismSpec(name=name, description=description, source=source, n=n, alpha=alpha,
                         alpha_exact=alpha_exact, epsilon_exact=epsilon_exact, matrix=rows,
                         exact=exact)
