"""Count-query problem files (`kind = "count"`) and mechanism files (`dpverify derive`).

Valid files load into the frozen dataclasses spec.md describes; every invalid one is a
SpecError whose message names the file, the key and what is allowed (never another
exception); unknown keys are refused.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpverify.errors import SpecError
from dpverify.spec import load, loads
from dpverify.spec.count_loader import loads_mechanism
from dpverify.spec.count_model import CountSpec, LossDef
from dpverify.spec.losses import loss_table
from dpverify.spec.model import Expectation

PROBLEMS = Path(__file__).resolve().parent.parent / "problems" / "count"


def count(body: str = 'loss = "abs"', problem: str = 'n = 4\nalpha = "1/2"', tail: str = ""):
    text = f'[problem]\nkind = "count"\n{problem}\n\n[consumer]\n{body}\n{tail}'
    return loads(text, source="c.toml", default_name="c")


# --------------------------------------------------------------------------------------
# Valid files


def test_full_file_loads_into_a_frozen_spec():
    spec = loads('''
[problem]
name = "flu"
description = "count of flu cases"
kind = "count"
n = 6
alpha = "1/3"

[consumer]
loss = "square"
side_information = [1, 4]
model = "minimax"

[expect.consumer]
minimax = 1.25
''', source="flu.toml")
    assert isinstance(spec, CountSpec)
    assert spec.kind == "count" and spec.name == "flu" and spec.source == "flu.toml"
    assert spec.description == "count of flu cases"
    assert spec.n == 6 and spec.alpha_exact == Fraction(1, 3) and spec.alpha == 1 / 3
    assert spec.epsilon_exact is None
    assert spec.loss == LossDef(kind="named", name="square")
    assert spec.side_information == (1, 2, 3, 4)
    assert spec.model == spec.accuracy == "minimax" and spec.prior is None
    assert spec.expect == (Expectation(agent="consumer", accuracy="minimax", value=1.25),)
    with pytest.raises(AttributeError):
        spec.n = 7  # frozen


def test_defaults_name_side_information_and_model():
    spec = count()
    assert spec.name == "c" and spec.description == ""
    assert spec.side_information == (0, 1, 2, 3, 4) and spec.full_side_information
    assert spec.model == "minimax" and spec.expect == ()


def test_epsilon_gives_alpha_e_to_the_minus_epsilon():
    spec = count(problem="n = 3\nepsilon = 0.5")
    assert spec.alpha == pytest.approx(math.exp(-0.5), abs=1e-15)
    assert spec.alpha_exact is None and spec.epsilon_exact == Fraction(1, 2)
    zero = count(problem="n = 3\nepsilon = 0")
    assert zero.alpha == 1.0 and zero.alpha_exact == 1  # epsilon = 0 is exactly alpha = 1


@pytest.mark.parametrize("alpha, exact", [("0", 0), ("1", 1), ('"2/7"', Fraction(2, 7)),
                                          ("0.25", Fraction(1, 4)), ('"0.1"', Fraction(1, 10))])
def test_alpha_edge_values_and_exact_strings(alpha, exact):
    spec = count(problem=f"n = 2\nalpha = {alpha}")
    assert spec.alpha_exact == exact and spec.alpha == float(exact)


def test_side_information_as_a_set_is_sorted():
    spec = count('loss = "abs"\nside_information = { set = [4, 0, 2] }')
    assert spec.side_information == (0, 2, 4)


def test_n_zero_is_legal():
    spec = count(problem="n = 0\nalpha = 0.5")
    assert spec.n == 0 and spec.side_information == (0,)
    assert loss_table(spec).shape == (1, 1)


def test_bayes_prior_is_normalised_exactly():
    spec = count('loss = "abs"\nmodel = "bayes"\nprior = [1, "1/2", 0, 0.5, 2]')
    assert spec.model == "bayes"
    assert spec.prior == (Fraction(1, 4), Fraction(1, 8), 0, Fraction(1, 8), Fraction(1, 2))
    assert sum(spec.prior) == 1


def test_bayes_prior_may_be_zero_outside_side_information():
    spec = count('loss = "abs"\nmodel = "bayes"\nside_information = [1, 2]\n'
                 'prior = [0, 1, 3, 0, 0]')
    assert spec.prior == (0, Fraction(1, 4), Fraction(3, 4), 0, 0)


@pytest.mark.parametrize("loss, expected", [
    ('"abs"', lambda i, r: abs(i - r)),
    ('"square"', lambda i, r: (i - r) ** 2),
    ('"indicator"', lambda i, r: int(i != r)),
    ('{ expr = "2 * (r - i) if r > i else i - r + n" }',
     lambda i, r: 2 * (r - i) if r > i else i - r + 4),
])
def test_losses_are_tabulated_exactly(loss, expected):
    table = loss_table(count(f"loss = {loss}"))
    assert table.shape == (5, 5)
    for i in range(5):
        for r in range(5):
            assert table[i, r] == expected(i, r)
            assert isinstance(table[i, r], Fraction)


def test_matrix_loss_with_exact_rationals():
    spec = count('loss = { matrix = [[0, "1/2"], [1.5, 0]] }', problem="n = 1\nalpha = 0.5")
    table = loss_table(spec)
    assert table[0, 1] == Fraction(1, 2) and table[1, 0] == Fraction(3, 2)
    assert spec.loss.kind == "matrix"


def test_loss_table_is_cached_on_the_spec():
    spec = count()
    assert loss_table(spec) is loss_table(spec)


# --------------------------------------------------------------------------------------
# Invalid files: one SpecError naming the key


ERRORS = [
    # (problem lines, consumer lines, extra, key named in the message, words in the message)
    ("n = -1\nalpha = 0.5", 'loss = "abs"', "", "problem.n", ">= 0"),
    ("n = 2.5\nalpha = 0.5", 'loss = "abs"', "", "problem.n", "integer"),
    ("n = true\nalpha = 0.5", 'loss = "abs"', "", "problem.n", "integer"),
    ("n = 999999\nalpha = 0.5", 'loss = "abs"', "", "problem.n", "<="),
    ("n = 2", 'loss = "abs"', "", "problem.epsilon", "is required"),
    ("n = 2\nalpha = 1.5", 'loss = "abs"', "", "problem.alpha", "[0, 1]"),
    ("n = 2\nalpha = -0.1", 'loss = "abs"', "", "problem.alpha", "[0, 1]"),
    ('n = 2\nalpha = "1/0"', 'loss = "abs"', "", "problem.alpha", "denominator"),
    ('n = 2\nalpha = "half"', 'loss = "abs"', "", "problem.alpha", "rational"),
    ("n = 2\nalpha = 0.5\nepsilon = 1", 'loss = "abs"', "", "problem.alpha", "not both"),
    ("n = 2\nepsilon = -1", 'loss = "abs"', "", "problem.epsilon", ">= 0"),
    ("n = 2\nepsilon = 1000", 'loss = "abs"', "", "problem.epsilon", "at most"),
    ("n = 2\nepsilon = nan", 'loss = "abs"', "", "problem.epsilon", "finite"),
    ("n = 2\nalpha = 0.5\nparties = 3", 'loss = "abs"', "", "problem.parties", "unknown key"),
    ("n = 2\nalpha = 0.5", "", "", "consumer.loss", "is required"),
    ("n = 2\nalpha = 0.5", 'loss = "abss"', "", "consumer.loss", "abs, square, indicator"),
    ("n = 2\nalpha = 0.5", "loss = 3", "", "consumer.loss", "allowed"),
    ("n = 2\nalpha = 0.5", 'loss = { expr = "x + 1" }', "", "consumer.loss.expr", "name"),
    ("n = 2\nalpha = 0.5", 'loss = { expr = "i // (i - r)" }', "", "consumer.loss.expr",
     "fails at i = 0, r = 0"),
    ("n = 2\nalpha = 0.5", 'loss = { expr = "__import__(\'os\')" }', "",
     "consumer.loss.expr", ""),
    ("n = 2\nalpha = 0.5", 'loss = { expr = "i", extra = 1 }', "", "consumer.loss", "allowed"),
    ("n = 1\nalpha = 0.5", "loss = { matrix = [[0, 1]] }", "", "consumer.loss.matrix",
     "2 rows"),
    ("n = 1\nalpha = 0.5", "loss = { matrix = [[0, 1], [1]] }", "", "consumer.loss.matrix[1]",
     "2 entries"),
    ("n = 1\nalpha = 0.5", 'loss = { matrix = [[0, 1], [1, "x"]] }', "",
     "consumer.loss.matrix[1][1]", "rational"),
    ("n = 1\nalpha = 0.5", "loss = { matrix = [[0, 1], [1, 1e308]] }\n", "",
     "", ""),  # a valid float: no error expected below (filtered out)
    ("n = 1\nalpha = 0.5", 'loss = { expr = "10 ** 200 * 10 ** 200" }', "", "consumer.loss",
     "too large for a float"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = [3, 1]', "",
     "consumer.side_information", "a <= b"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = [0, 5]', "",
     "consumer.side_information[1]", "0..4"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = [1, 2, 3]', "",
     "consumer.side_information", "two integers"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = [1.0, 2]', "",
     "consumer.side_information[0]", "integer"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = { set = [] }', "",
     "consumer.side_information.set", "non-empty"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = { set = [1, 1] }', "",
     "consumer.side_information.set", "distinct"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nside_information = { range = [1, 2] }', "",
     "consumer.side_information", "{ set = [...] }"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nmodel = "bayesian"', "", "consumer.model",
     "'minimax', 'bayes'"),
    ("n = 4\nalpha = 0.5", 'loss = "abs"\nmodel = "bayes"', "", "consumer.prior",
     "is required"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"\nmodel = "bayes"\nprior = [1, 1]', "",
     "consumer.prior", "n + 1 = 3"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"\nmodel = "bayes"\nprior = [1, -1, 1]', "",
     "consumer.prior[1]", ">= 0"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"\nmodel = "bayes"\nprior = [0, 0, 0]', "",
     "consumer.prior", "not all be 0"),
    ("n = 2\nalpha = 0.5",
     'loss = "abs"\nmodel = "bayes"\nprior = [1, 1, 1]\nside_information = [0, 1]', "",
     "consumer.prior[2]", "outside side_information"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"\nprior = [1, 1, 1]', "", "consumer.prior",
     'model = "bayes"'),
    ("n = 2\nalpha = 0.5", 'loss = "abs"\nweights = 1', "", "consumer.weights", "unknown key"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"', "[expect.consumer]\nbayes = 1.0",
     "expect.consumer.bayes", "model is 'minimax'"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"', "[expect.consumer]\nworst = 1.0",
     "expect.consumer.worst", "minimax, bayes"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"', '[expect.consumer]\nminimax = "one"',
     "expect.consumer.minimax", "finite number"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"', "[expect.observer]\naverage = 1.0",
     "expect.observer", "unknown key"),
    ("n = 2\nalpha = 0.5", 'loss = "abs"', "[observer]\nfunction = \"xor\"", "observer",
     "unknown key"),
]


@pytest.mark.parametrize("problem, consumer, tail, key, words",
                         [e for e in ERRORS if e[3]])
def test_invalid_files_name_the_key(problem, consumer, tail, key, words):
    with pytest.raises(SpecError) as info:
        count(consumer, problem=problem, tail=tail)
    message = str(info.value)
    assert message.startswith("c.toml: "), message
    assert f"`{key}`" in message, message
    assert words in message, message
    assert "\n" not in message


@pytest.mark.parametrize("text, key", [
    ('[problem]\nkind = "count"\nn = 2\nalpa = 0.5\n[consumer]\nloss = "abs"\n',
     "problem.alpa"),
    ('[problem]\nkind = "count"\nn = 2\nalpha = 0.5\n[consumr]\nloss = "abs"\n', "consumr"),
    ('[problem]\nkind = "count"\nn = 2\nalpha = 0.5\n[consumer]\nlos = "abs"\n',
     "consumer.los"),
    (('[problem]\nkind = "count"\nn = 2\nalpha = 0.5\n[consumer]\nloss = "abs"\n'
      '[expect.consumr]\nminimax = 1\n'), "expect.consumr"),
])
def test_a_typo_is_named_before_what_it_leaves_missing(text, key):
    """`alpa` must not be reported as "epsilon is required", nor `[consumr]` as "consumer
    is required": the unknown key comes first, as in multi-party files."""
    with pytest.raises(SpecError) as info:
        loads(text, source="c.toml")
    assert f"`{key}`" in str(info.value) and "unknown key" in str(info.value)
    assert "is required" not in str(info.value)


def test_a_loss_with_division_is_exact():
    table = loss_table(count('loss = { expr = "abs(i - r) / n" }'))
    assert table[0, 3] == Fraction(3, 4) and table[2, 2] == 0


def test_an_exact_rational_expectation_is_accepted():
    spec = count(tail='[expect.consumer]\nminimax = "5/4"')
    assert spec.expect[0].value == 1.25


def test_a_huge_but_finite_float_loss_is_accepted():
    spec = count("loss = { matrix = [[0, 1], [1, 1e308]] }", problem="n = 1\nalpha = 0.5")
    assert float(loss_table(spec)[1, 1]) == 1e308


def test_missing_consumer_table():
    with pytest.raises(SpecError, match="`consumer`.*is required"):
        loads('[problem]\nkind = "count"\nn = 2\nalpha = 0.5\n', source="c.toml")


def test_unknown_kind_names_the_allowed_kinds():
    with pytest.raises(SpecError, match="'multiparty', 'count'"):
        loads('[problem]\nkind = "counting"\nn = 2\n', source="c.toml")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.integers(-5, 12), st.floats(allow_nan=True),
                       st.text(alphabet="ab01-, []{}", max_size=6),
                       st.booleans(), st.lists(st.integers(-2, 12), max_size=4)))
def test_any_side_information_value_is_valid_or_a_spec_error(value):
    import json

    literal = json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        literal = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    try:
        spec = count(f'loss = "abs"\nside_information = {literal}', problem="n = 8\nalpha = 0.5")
    except SpecError as exc:
        assert "consumer.side_information" in str(exc)
        return
    assert isinstance(value, list) and len(value) == 2
    assert spec.side_information == tuple(range(value[0], value[1] + 1))


@settings(max_examples=40, deadline=None)
@given(members=st.sets(st.integers(0, 9), min_size=1), n=st.integers(9, 12))
def test_random_side_information_sets_round_trip(members, n):
    spec = count(f'loss = "indicator"\nside_information = {{ set = {sorted(members)} }}',
                 problem=f"n = {n}\nalpha = 0.5")
    assert spec.side_information == tuple(sorted(members))


@settings(max_examples=40, deadline=None)
@given(weights=st.lists(st.fractions(min_value=0, max_value=10, max_denominator=50),
                        min_size=4, max_size=4).filter(lambda w: sum(w) > 0))
def test_random_priors_are_normalised(weights):
    items = ", ".join(f'"{w.numerator}/{w.denominator}"' for w in weights)
    spec = count(f'loss = "abs"\nmodel = "bayes"\nprior = [{items}]',
                 problem="n = 3\nalpha = 0.5")
    total = sum(weights)
    assert spec.prior == tuple(w / total for w in weights)


def test_count_spec_validates_itself():
    with pytest.raises(ValueError, match="alpha"):
        CountSpec(name="x", description="", source="x", n=2, alpha=1.5, alpha_exact=None,
                  epsilon_exact=None, loss=LossDef("named", "abs"), side_information=(0,),
                  model="minimax")
    with pytest.raises(ValueError, match="prior"):
        CountSpec(name="x", description="", source="x", n=2, alpha=0.5, alpha_exact=None,
                  epsilon_exact=None, loss=LossDef("named", "abs"), side_information=(0,),
                  model="bayes")


# --------------------------------------------------------------------------------------
# Shipped problems


def test_at_least_eight_shipped_count_problems_each_described_with_expectations():
    files = sorted(PROBLEMS.glob("*.toml"))
    assert len(files) >= 8
    losses, models, sides, largest = set(), set(), set(), 0
    for path in files:
        spec = load(path)
        assert spec.kind == "count"
        assert len(spec.description) > 30, path
        assert spec.expect and spec.expect[0].accuracy == spec.model, path
        losses.add(spec.loss.name or spec.loss.kind)
        models.add(spec.model)
        sides.add(spec.full_side_information)
        largest = max(largest, spec.n)
    assert {"abs", "square", "indicator"} <= losses
    assert models == {"minimax", "bayes"} and sides == {True, False}
    assert largest >= 50


# --------------------------------------------------------------------------------------
# Mechanism files for `dpverify derive`


def mech(body: str):
    return loads_mechanism(body, source="m.toml")


def test_mechanism_file_exact():
    spec = mech('[mechanism]\nalpha = "1/2"\nmatrix = [["2/3", "1/3"], ["1/3", "2/3"]]\n'
                'description = "rr"')
    assert spec.n == 1 and spec.exact and spec.alpha_exact == Fraction(1, 2)
    assert spec.matrix == ((Fraction(2, 3), Fraction(1, 3)), (Fraction(1, 3), Fraction(2, 3)))
    assert spec.name == "mechanism" and spec.description == "rr"


def test_mechanism_file_with_floats_or_epsilon_is_not_exact():
    assert not mech("[mechanism]\nalpha = 0.5\nmatrix = [[0.75, 0.25], [0.25, 0.75]]").exact
    assert not mech('[mechanism]\nepsilon = 1\nmatrix = [["3/4", "1/4"], ["1/4", "3/4"]]').exact
    # integers are exact
    assert mech("[mechanism]\nalpha = 0\nmatrix = [[1, 0], [0, 1]]").exact


def test_mechanism_rows_with_float_rounding_pass_within_tolerance():
    spec = mech("[mechanism]\nalpha = 0.5\nmatrix = [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], "
                "[0.6, 0.2, 0.2]]")
    assert not spec.exact and spec.n == 2


@pytest.mark.parametrize("body, key, words", [
    ('[mechanism]\nalpha = "1/2"\nmatrix = [["1/2", "1/3"], ["1/2", "1/2"]]',
     "mechanism.matrix[0]", "sum to 1"),
    ("[mechanism]\nalpha = 0.5\nmatrix = [[0.5, 0.4], [0.5, 0.5]]", "mechanism.matrix[0]",
     "sum to 1"),
    ('[mechanism]\nalpha = "1/2"\nmatrix = [[2, -1], [0, 1]]', "mechanism.matrix[0][1]",
     ">= 0"),
    ('[mechanism]\nalpha = "1/2"\nmatrix = [[1, 0, 0], [0, 1, 0]]', "mechanism.matrix[0]",
     "entries"),
    ('[mechanism]\nalpha = "1/2"\nmatrix = []', "mechanism.matrix", "non-empty"),
    ('[mechanism]\nalpha = "1/2"', "mechanism.matrix", "is required"),
    ("[mechanism]\nmatrix = [[1]]", "mechanism.epsilon", "is required"),
    ("[mechanism]\nalpha = 2\nmatrix = [[1]]", "mechanism.alpha", "[0, 1]"),
    ('[mechanism]\nalpha = 0.5\nmatrix = [[1]]\nmatirx = 1', "mechanism.matirx",
     "unknown key"),
    ('[mechanism]\nalpha = 0.5\nmatrix = [[1]]\n[extra]\na = 1', "extra", "unknown key"),
    ("[problem]\nn = 1", "mechanism", "is required"),
    ("[mechanism]\nalpa = 0.5\nmatrix = [[1]]", "mechanism.alpa", "unknown key"),
    ("[mechanism]\nalpha = 0.5\nmatrix = [[1]]\n[mechanismm]\nx = 1", "mechanismm",
     "unknown key"),
])
def test_invalid_mechanism_files(body, key, words):
    with pytest.raises(SpecError) as info:
        mech(body)
    message = str(info.value)
    assert f"`{key}`" in message and words in message, message


def test_mechanism_toml_syntax_error():
    with pytest.raises(SpecError, match="TOML syntax error"):
        mech("[mechanism\n")


def test_loss_table_is_an_exact_object_array():
    table = loss_table(count('loss = { expr = "(i - r) ** 2 * 3" }'))
    assert table.dtype == object and np.all(table == 3 * loss_table(count('loss = "square"')))
