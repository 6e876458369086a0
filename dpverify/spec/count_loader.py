"""Count-query problem files (`kind = "count"`) and mechanism files for `dpverify derive`.

spec.md is the contract. Every error is a SpecError naming the file, the key, the bad value
and what is allowed; unknown keys are refused; expressions go through the safe evaluator.
The `[consumer]` and `[expect]` tables and the privacy level are parsed by
spec/sections.py (a mechanism file with a consumer, for `dpverify audit`, is
spec/mechanism_audit.py).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from dpverify.errors import SpecError
from dpverify.spec.count_model import CountSpec, MechanismSpec
from dpverify.spec.numbers import STOCHASTIC_TOL
from dpverify.spec.reader import Table, parse_toml, read_text
from dpverify.spec.sections import (
    consumer_table,
    count_delta,
    count_expectations,
    count_levels,
    number_matrix,
    square_matrix,
)

__all__ = ["CountSpec", "MechanismSpec", "load_mechanism", "loads_mechanism", "parse_count",
           "parse_mechanism"]

PROBLEM_KEYS = ("name", "description", "kind", "n", "epsilon", "alpha", "delta")
MECHANISM_KEYS = ("name", "description", "alpha", "epsilon", "delta", "matrix")
MAX_N = 5000  # answers 0..n; the LP size guard refuses far smaller n by default
MAX_TABULATED_N = 150  # tabulate (and so validate) the loss at load time up to this n


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
    alpha, alpha_exact, epsilon_exact = count_levels(problem)
    delta = count_delta(problem)

    if not root.has("consumer"):
        raise SpecError(file, "consumer", None,
                        "is required: a [consumer] table with `loss` (and optionally "
                        "side_information, model, prior)")
    loss, side, model, prior = consumer_table(root.table("consumer"), n)
    expect = count_expectations(root, model) if root.has("expect") else ()

    spec = CountSpec(name=name, description=description, source=file, n=n, alpha=alpha,
                     alpha_exact=alpha_exact, epsilon_exact=epsilon_exact, loss=loss,
                     side_information=side, model=model, prior=prior, expect=expect,
                     delta=delta)
    if n <= MAX_TABULATED_N:
        from dpverify.spec.losses import loss_table

        loss_table(spec)  # surface expression errors at load time
    return spec


# --------------------------------------------------------------------------------------
# Mechanism files (`dpverify derive FILE`)


def load_mechanism(path: str | Path) -> MechanismSpec:
    """Read and validate a mechanism file (a `[mechanism]` table; see `dpverify derive`)."""
    return loads_mechanism(read_text(path), source=str(path), default_name=Path(path).stem)


def loads_mechanism(text: str, *, source: str = "<string>",
                    default_name: str = "mechanism") -> MechanismSpec:
    """A `[mechanism]` table: `alpha` (or `epsilon`) and an (n+1) x (n+1) row-stochastic
    `matrix` (rows: true answers, columns: released answers; "p/q" strings allowed); with
    `delta` > 0 the matrix may have any number of columns (released values)."""
    document = parse_toml(text, source)
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
    alpha, alpha_exact, epsilon_exact = count_levels(table)
    delta = count_delta(table)
    value = table.get("matrix")
    key = table.key("matrix")
    if not isinstance(value, list) or not value:
        raise SpecError(source, key, value,
                        "must be a non-empty list of rows: an (n+1) x (n+1) row-stochastic "
                        "matrix (rows: true answers, columns: released answers)")
    if len(value) > MAX_N + 1:
        raise SpecError(source, key, f"{len(value)} rows", f"at most {MAX_N + 1} rows")
    n = len(value) - 1
    # with delta > 0 the released values need not be 0..n: RR(epsilon, delta) on one bit
    # has four (docs/format.md, "Mechanism files"); a pure mechanism is square (GS)
    rows = square_matrix(table, value, key, n) if delta == 0 else \
        number_matrix(table, value, key)
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
                         exact=exact, delta=delta, float_entries=floats)
