"""The multi-party problem-file loader (spec.md): every kind of bad input, and the good ones.

Each bad input must raise SpecError whose text names the file, the key, the bad value
and what is allowed, and through the CLI exit 2 with that one line on stderr (never a
traceback). The positive cases compare the tabulated functions with tables written out
by hand here, not computed by the code under test.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest
from budget import examples
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpverify.cli import main
from dpverify.errors import SizeLimitError, SpecError
from dpverify.spec import load, loads
from dpverify.spec.model import Accuracy, Expectation, MultipartySpec
from dpverify.spec.tables import tabulate, tabulated

HEAD = "[problem]\nparties = 3\nepsilon = 1.0\n"
OBS = '[observer]\nfunction = "xor"\n'


def doc(*parts: str) -> str:
    return "".join(parts)


# (id, text, key, the value as shown, a regex for what is allowed)
BAD = [
    ("syntax", doc(HEAD, "x = = 1\n", OBS), "", None, r"TOML syntax error: .*line 4"),
    ("unknown-top", doc(HEAD, OBS, "[extra]\na = 1\n"), "extra", "{'a': 1}",
     r"unknown key; allowed here: problem, observer, party, expect"),
    ("unknown-top-typo", doc(HEAD, '[observr]\nfunction = "xor"\n'), "observr",
     "{'function': 'xor'}", r"unknown key; allowed here: problem, observer"),
    ("unknown-problem", doc(HEAD, "epsilom = 2\n", OBS), "problem.epsilom", "2",
     r"unknown key; allowed here: name, description, kind, parties, epsilon, lambda, delta, "
     r"accuracy"),
    ("unknown-observer", doc(HEAD, OBS, 'gian = "indicator"\n'), "observer.gian",
     "'indicator'", r"unknown key; allowed here: function, gain, outputs"),
    ("unknown-party", doc(HEAD, '[[party]]\nindex = 1\nfunction = "xor"\nfoo = 1\n'),
     "party[0].foo", "1", r"unknown key; allowed here: index, function, gain, outputs"),
    ("unknown-expect", doc(HEAD, OBS, "[expect]\nbogus = 1\n"), "expect.bogus", "1",
     r"unknown key; allowed here: observer, party"),
    ("unknown-expect-accuracy", doc(HEAD, OBS, "[expect.observer]\naverag = 0.5\n"),
     "expect.observer.averag", "0.5", r"unknown key; allowed here: average, worst"),
    ("type-parties", doc('[problem]\nparties = "3"\nepsilon = 1.0\n', OBS), "problem.parties",
     "'3'", r"must be an integer, not a string"),
    ("type-epsilon-bool", doc("[problem]\nparties = 3\nepsilon = true\n", OBS),
     "problem.epsilon", "True", r"must be a number or an exact rational string .*not a boolean"),
    ("type-function", doc(HEAD, "[observer]\nfunction = 3\n"), "observer.function", "3",
     r"allowed: a name \(xor, parity, and, or, majority, sum, threshold:t, bit:i\)"),
    ("type-outputs", doc(HEAD, OBS, 'outputs = ["a"]\n'), "observer.outputs[0]", "'a'",
     r"must be a number"),
    ("type-expect", doc(HEAD, OBS, '[expect.observer]\naverage = "x"\n'),
     "expect.observer.average", "'x'",
     r'must be a finite number or an exact rational "p/q", not a string'),
    ("epsilon-negative", doc("[problem]\nparties = 3\nepsilon = -0.5\n", OBS),
     "problem.epsilon", "-0.5", r"epsilon must be a number >= 0"),
    ("epsilon-nan", doc("[problem]\nparties = 3\nepsilon = nan\n", OBS), "problem.epsilon",
     "nan", r"must be a finite number"),
    ("epsilon-inf", doc("[problem]\nparties = 3\nepsilon = inf\n", OBS), "problem.epsilon",
     "inf", r"must be a finite number"),
    ("epsilon-list-entry", doc("[problem]\nparties = 3\nepsilon = [1.0, -2.0, 1]\n", OBS),
     "problem.epsilon[1]", "-2.0", r"epsilon must be a number >= 0"),
    ("lambda-below-1", doc("[problem]\nparties = 3\nlambda = 0.5\n", OBS), "problem.lambda",
     "0.5", r"lambda = e\^epsilon must be a number >= 1"),
    ("lambda-rational-below-1", doc('[problem]\nparties = 3\nlambda = "2/3"\n', OBS),
     "problem.lambda", "'2/3'", r"must be a number >= 1"),
    ("lambda-not-rational", doc('[problem]\nparties = 3\nlambda = "abc"\n', OBS),
     "problem.lambda", "'abc'", r'an exact rational such as "3/2"'),
    ("lambda-zero-denominator", doc('[problem]\nparties = 3\nlambda = "3/0"\n', OBS),
     "problem.lambda", "'3/0'", r"denominator .* must not be 0"),
    ("lambda-too-many-digits",
     doc('[problem]\nparties = 3\nlambda = "' + "1" * 4001 + '/3"\n', OBS),
     "problem.lambda", "'" + "1" * 76 + "...",
     r"too many digits: at most 4,000 in the numerator and in the denominator"),
    ("gain-denominator-too-long",
     doc(HEAD, '[observer]\nfunction = "xor"\ngain = { matrix = [["1/' + "7" * 4001
         + '", "0"], ["0", "1"]] }\n'),
     "observer.gain.matrix[0][0]", "'1/" + "7" * 74 + "...", r"at most 4,000"),
    ("integer-too-many-digits",
     doc("[problem]\nparties = 3\nlambda = " + "1" * 4001 + "\n", OBS),
     "problem.lambda", "1" * 77 + "...", r"an integer with at most 4,000 digits"),

    ("list-length", doc("[problem]\nparties = 3\nepsilon = [1.0, 2.0]\n", OBS),
     "problem.epsilon", "[1.0, 2.0]", r"a list needs exactly 3 entries, one per party"),
    ("lambda-list-length", doc('[problem]\nparties = 2\nlambda = ["3/2", 2, 4]\n', OBS),
     "problem.lambda", "['3/2', 2, 4]", r"exactly 2 entries"),
    ("party-index-high", doc(HEAD, '[[party]]\nindex = 4\nfunction = "xor"\n'),
     "party[0].index", "4", r"must be an integer <= 3"),
    ("party-index-zero", doc(HEAD, '[[party]]\nindex = 0\nfunction = "xor"\n'),
     "party[0].index", "0", r"must be an integer >= 1"),
    ("party-duplicate", doc(HEAD, '[[party]]\nindex = 2\nfunction = "xor"\n',
                            '[[party]]\nindex = 2\nfunction = "and"\n'),
     "party[1].index", "2", r"each party may appear once"),
    ("party-not-array", doc('[party]\nindex = 1\nfunction = "xor"\n', HEAD), "party",
     "{'index': 1, 'function': 'xor'}", r"must be an array of tables: write \[\[party\]\]"),
    ("table-length", doc(HEAD, "[observer]\nfunction = { table = [0, 1, 1] }\n"),
     "observer.function.table", "[0, 1, 1]", r"has 3 values; a table needs 2\^3 = 8 values"),
    ("table-mapping-missing",
     doc("[problem]\nparties = 2\nepsilon = 1.0\n",
         '[observer]\nfunction = { table = { "00" = 0, "01" = 1, "10" = 1 } }\n'),
     "observer.function.table", "{'00': 0, '01': 1, '10': 1}",
     r"every input must be listed: '11' is missing"),
    ("table-mapping-bad-key",
     doc("[problem]\nparties = 2\nepsilon = 1.0\n",
         '[observer]\nfunction = { table = { "00" = 0, "01" = 1, "10" = 1, "1" = 0 } }\n'),
     "observer.function.table", "'1'", r"keys must be bit strings of length 2"),
    ("table-value", doc("[problem]\nparties = 1\nepsilon = 1.0\n",
                        '[observer]\nfunction = { table = [0, "one"] }\n'),
     "observer.function.table[1]", "'one'", r"must be a number"),
    ("matrix-ragged", doc(HEAD, OBS, "gain = { matrix = [[1, 0], [0]] }\n"),
     "observer.gain.matrix[1]", "[0]", r"ragged matrix: row 1 has 1 entries, row 0 has 2"),
    ("matrix-rows", doc(HEAD, OBS, "gain = { matrix = [[1, 0], [0, 1], [1, 1]] }\n"),
     "observer.gain.matrix", "'3 rows'",
     r"one row per distinct function value, sorted \(2: 0, 1\)"),
    ("matrix-columns", doc(HEAD, OBS, "gain = { matrix = [[1, 0, 0], [0, 1, 0]] }\n"),
     "observer.gain.matrix[0]", "'3 entries'", r"one entry per output \(2: 0, 1\)"),
    ("matrix-not-rows", doc(HEAD, OBS, "gain = { matrix = [1, 0] }\n"),
     "observer.gain.matrix", "[1, 0]", r"must be a non-empty list of rows"),
    ("no-agent", HEAD, "", None, r"no agent: add an \[observer\] table or at least one"),
    ("no-problem", OBS, "problem", None, r"is required"),
    ("unknown-function", doc(HEAD, '[observer]\nfunction = "xnor"\n'), "observer.function",
     "'xnor'", r"unknown function; allowed: a name \(xor, parity, and, or, majority, sum"),
    ("unknown-gain", doc(HEAD, OBS, 'gain = "abs"\n'), "observer.gain", "'abs'",
     r"unknown gain; allowed: indicator, -abs, -square, \{ expr"),
    ("epsilon-and-lambda", doc("[problem]\nparties = 3\nepsilon = 1.0\nlambda = 2\n", OBS),
     "problem.lambda", "2", r"give either `epsilon` or `lambda`, not both"),
    ("neither", doc("[problem]\nparties = 3\n", OBS), "problem.epsilon", None,
     r"is required: give `epsilon` \(>= 0\) or `lambda` \(>= 1\)"),
    ("threshold-x", doc(HEAD, '[observer]\nfunction = "threshold:x"\n'), "observer.function",
     "'threshold:x'", r"write threshold:N with an integer N in 0..3"),
    ("threshold-4", doc(HEAD, '[observer]\nfunction = "threshold:4"\n'), "observer.function",
     "'threshold:4'", r"threshold:N needs 0 <= N <= 3"),
    ("bit-9", doc(HEAD, '[observer]\nfunction = "bit:9"\n'), "observer.function", "'bit:9'",
     r"bit:N needs 1 <= N <= 3 \(parties = 3\)"),
    ("bit-superscript", doc(HEAD, '[observer]\nfunction = "bit:\u00b2"\n'),
     "observer.function", "'bit:\u00b2'", r"write bit:N with an integer N in 1..3"),
    ("expr-import", doc(HEAD, "[observer]\nfunction = { expr = \"__import__('os').getcwd()\" }\n"),
     "observer.function.expr", "\"__import__('os').getcwd()\"",
     r"is not allowed.*allowed: numbers, the names k, x, x1, x2, x3"),
    ("expr-dunder-call", doc(HEAD, '[observer]\nfunction = { expr = "__import__(1)" }\n'),
     "observer.function.expr", "'__import__(1)'", r"allowed: numbers, the names"),
    ("expr-fails", doc(HEAD, '[observer]\nfunction = { expr = "1 // (x1 - x1)" }\n'),
     "observer.function.expr", "'1 // (x1 - x1)'", r"fails at x = 000: division by zero"),
    ("gain-expr-refused", doc(HEAD, OBS, 'gain = { expr = "f.real" }\n'),
     "observer.gain.expr", "'f.real'", r"attribute access is not allowed.*the names f, y"),
    ("gain-expr-fails", doc(HEAD, OBS, 'gain = { expr = "1 // (f - y)" }\n'),
     "observer.gain.expr", "'1 // (f - y)'", r"fails at f = 0, y = 0: division by zero"),
    ("gain-overflow", doc(HEAD, OBS, 'gain = { expr = "2**250 * 2**250 * 2**250 * 2**250 * '
                                     '2**250 * (f == y)" }\n'),
     "observer.gain", "'expr'", r"a gain at f = 0 is too large for a float"),
    ("outputs-duplicate", doc(HEAD, OBS, "outputs = [0, 0]\n"), "observer.outputs", "[0, 0]",
     r"outputs must be distinct"),
    ("accuracy", doc(HEAD, 'accuracy = "best"\n', OBS), "problem.accuracy", "'best'",
     r'allowed: "average", "worst", or a list of them'),
    ("kind", doc('[problem]\nkind = "multi"\nparties = 3\nepsilon = 1.0\n', OBS),
     "problem.kind", "'multi'", r"allowed: 'multiparty', 'count'"),
    ("parties-zero", doc("[problem]\nparties = 0\nepsilon = 1.0\n", OBS), "problem.parties",
     "0", r"must be an integer >= 1"),
    ("expect-no-such-agent", doc(HEAD, OBS, "[expect.party.2]\naverage = 0.5\n"),
     "expect.party.2", None, r"no such agent in this problem; agents: observer"),
    ("expect-party-index", doc(HEAD, OBS, '[expect.party."\u00b2"]\naverage = 0.5\n'),
     "expect.party.\u00b2", "{'average': 0.5}", r"write \[expect.party.N\]"),
    ("expect-nan", doc(HEAD, OBS, "[expect.observer]\nworst = nan\n"),
     "expect.observer.worst", "nan", r"must be a finite number"),
    ("problem-not-table", doc("problem = 3\n", OBS), "problem", "3",
     r"must be a table, not an integer"),
    ("nested-too-deep", "x = " + "[" * 5000 + "]" * 5000 + "\n", "", None,
     r"nested too deeply"),
]
BAD_IDS = [case[0] for case in BAD]


def expected_message(path: str, key: str, value: str | None) -> str:
    """The start of the message: file, key and value (errors.SpecError's format).

    A missing key has no value to show (value None): only the key is required then.
    """
    if key:
        return f"{path}: `{key}`" if value is None else f"{path}: `{key}` = {value}: "
    return f"{path}: " if value is None else f"{path}: {value}: "


@pytest.mark.parametrize(("name", "text", "key", "value", "allowed"), BAD, ids=BAD_IDS)
def test_loader_error_names_file_key_value_and_allowed(write_toml, name, text, key, value,
                                                       allowed) -> None:
    path = write_toml(text, name)
    with pytest.raises(SpecError) as info:
        load(path)
    exc = info.value
    message = str(exc)
    assert exc.file == str(path)
    assert exc.key == key
    assert message.startswith(expected_message(str(path), key, value)), message
    assert re.search(allowed, exc.allowed), (allowed, exc.allowed)
    assert "\n" not in message


@pytest.mark.parametrize(("name", "text", "key", "value", "allowed"), BAD, ids=BAD_IDS)
def test_cli_exits_2_with_one_line(write_toml, name, text, key, value, allowed) -> None:
    path = write_toml(text, name)
    run = CliRunner().invoke(main, ["verify", str(path)])
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output
    assert isinstance(run.exception, SystemExit)  # a clean exit, not an escaped exception
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("dpverify: " + expected_message(str(path), key, value))
    assert "1 invalid" in run.stdout  # the summary counts it
    as_json = CliRunner().invoke(main, ["verify", "--json", str(path)])
    assert as_json.exit_code == 2
    # an invalid file is a result object too, as in `batch --json`
    (obj,) = json.loads(as_json.stdout)
    assert obj["invalid"] is True and obj["verdict"] == "error" and obj["results"] == []
    assert obj["source"] == str(path) and obj["reason"] == lines[0].removeprefix("dpverify: ")


def test_non_utf8_file(tmp_path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(HEAD.encode() + b'[observer]\nfunction = "xor"\n# caf\xe9\n')
    with pytest.raises(SpecError, match=r"is not UTF-8 text \(byte \d+: b'\\xe9'\)") as info:
        load(path)
    assert str(info.value).startswith(f"{path}: ")
    run = CliRunner().invoke(main, ["verify", str(path)])
    assert run.exit_code == 2
    assert "not UTF-8" in run.stderr and str(path) in run.stderr


def test_missing_file_and_directory_without_problems(tmp_path) -> None:
    with pytest.raises(SpecError, match="cannot read the file"):
        load(tmp_path / "absent.toml")
    (tmp_path / "empty").mkdir()
    run = CliRunner().invoke(main, ["verify", str(tmp_path / "empty")])
    assert run.exit_code == 2
    assert "no *.toml problem files found" in run.stderr


def test_oversized_file_is_refused(tmp_path) -> None:
    path = tmp_path / "huge.toml"
    path.write_text(HEAD + OBS + "# " + "x" * (4 * 1024 * 1024) + "\n")
    with pytest.raises(SpecError, match="larger than 4 MiB"):
        load(path)


def test_absurd_party_count_is_refused_quickly() -> None:
    """parties = 10^9 must not build per-party lists of 10^9 entries: refused at once."""
    with pytest.raises(SizeLimitError, match=r"`problem.parties` = 1000000000: too large"):
        loads("[problem]\nparties = 1000000000\nepsilon = 1.0\n" + OBS)
    # a count of 401 digits: the message shortens it, as every SpecError's value
    with pytest.raises(SizeLimitError) as refused:
        loads(f"[problem]\nparties = {10**400}\nepsilon = 1.0\n" + OBS)
    assert len(str(refused.value)) < 250 and "= 1000000000" in str(refused.value)


def test_a_byte_order_mark_is_harmless(tmp_path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + OBS).encode())
    assert load(path).parties == 3


def test_unknown_key_is_reported_before_anything_else() -> None:
    """A misspelt `epsilon` is named as such, not as a missing `epsilon`."""
    with pytest.raises(SpecError) as info:
        loads('[problem]\nparties = 3\nepsilom = 1.0\n' + OBS)
    assert info.value.key == "problem.epsilom"


def test_source_defaults_for_loads() -> None:
    with pytest.raises(SpecError, match=r"^<string>: `problem.parties`"):
        loads("[problem]\nparties = -1\nepsilon = 1\n" + OBS)
    with pytest.raises(SpecError, match=r"^mine.toml: "):
        loads("[problem]\nparties = -1\nepsilon = 1\n" + OBS, source="mine.toml")


# --- positive cases ------------------------------------------------------------------------

# Inputs in order 000, 001, ..., 111 (x1 the most significant bit), written out by hand.
NAMED_K3 = {
    "xor": [0, 1, 1, 0, 1, 0, 0, 1],
    "parity": [0, 1, 1, 0, 1, 0, 0, 1],
    "and": [0, 0, 0, 0, 0, 0, 0, 1],
    "or": [0, 1, 1, 1, 1, 1, 1, 1],
    "majority": [0, 0, 0, 1, 0, 1, 1, 1],
    "sum": [0, 1, 1, 2, 1, 2, 2, 3],
    "threshold:0": [1, 1, 1, 1, 1, 1, 1, 1],
    "threshold:1": [0, 1, 1, 1, 1, 1, 1, 1],
    "threshold:2": [0, 0, 0, 1, 0, 1, 1, 1],
    "threshold:3": [0, 0, 0, 0, 0, 0, 0, 1],
    "bit:1": [0, 0, 0, 0, 1, 1, 1, 1],
    "bit:2": [0, 0, 1, 1, 0, 0, 1, 1],
    "bit:3": [0, 1, 0, 1, 0, 1, 0, 1],
}


@pytest.mark.parametrize("name", NAMED_K3)
def test_named_functions_for_three_parties(name: str) -> None:
    spec = loads(HEAD + f'[observer]\nfunction = "{name}"\n')
    table = tabulate(spec, spec.agents[0])
    assert [int(v) for v in table.values] == NAMED_K3[name]
    assert table.outputs == tuple(Fraction(v) for v in sorted(set(NAMED_K3[name])))
    # Indicator gain: 1 exactly where the output is the function's value.
    for x, f in enumerate(NAMED_K3[name]):
        assert [float(g) for g in table.gain[x]] == [1.0 if y == f else 0.0
                                                   for y in table.outputs]


def test_parity_is_an_alias_of_xor() -> None:
    a = loads(HEAD + '[observer]\nfunction = "parity"\n').agents[0].function
    b = loads(HEAD + '[observer]\nfunction = "xor"\n').agents[0].function
    assert a == b


@pytest.mark.parametrize(("expr", "table"), [
    ("x1 and not x2 or x3", [0, 1, 0, 1, 1, 1, 0, 1]),
    ("sum(x) >= 2", [0, 0, 0, 1, 0, 1, 1, 1]),
    ("sum(x) == k", [0, 0, 0, 0, 0, 0, 0, 1]),
    ("x1 ^ x2 ^ x3", [0, 1, 1, 0, 1, 0, 0, 1]),
    ("4 * x1 + 2 * x2 + x3", [0, 1, 2, 3, 4, 5, 6, 7]),
    ("max(x) if x1 else min(x)", [0, 0, 0, 0, 1, 1, 1, 1]),
    ("1 if sum(x) > k/2 else 0", [0, 0, 0, 1, 0, 1, 1, 1]),  # majority, with `/`
])
def test_expression_functions(expr: str, table: list[int]) -> None:
    spec = loads(HEAD + f'[observer]\nfunction = {{ expr = "{expr}" }}\n')
    assert [int(v) for v in tabulate(spec, spec.agents[0]).values] == table


def test_division_gives_exact_function_values_and_gains() -> None:
    spec = loads(HEAD + '[observer]\nfunction = { expr = "sum(x) / k" }\n'
                 'gain = { expr = "-abs(f - y) / 2" }\n')
    table = tabulate(spec, spec.agents[0])
    assert table.values[:4] == (0, Fraction(1, 3), Fraction(1, 3), Fraction(2, 3))
    assert table.gain_exact[0][-1] == Fraction(-1, 2)  # f = 0, y = 1


def test_division_by_zero_in_a_problem_file_is_one_line() -> None:
    with pytest.raises(SpecError) as info:
        loads(HEAD + '[observer]\nfunction = { expr = "1 / (sum(x) - 1)" }\n',
              source="d.toml")
    assert str(info.value) == ("d.toml: `observer.function.expr` = '1 / (sum(x) - 1)': "
                               "fails at x = 001: division by zero in '1 / (sum(x) - 1)'")


def test_table_as_list_and_as_mapping_agree() -> None:
    head = "[problem]\nparties = 2\nepsilon = 1.0\n"
    listed = loads(head + "[observer]\nfunction = { table = [0, 2, 1, true] }\n")
    mapped = loads(head + '[observer]\nfunction = { table = { "11" = 1, "00" = 0, '
                          '"10" = 1, "01" = 2 } }\n')
    assert tabulate(listed, listed.agents[0]).values == (0, 2, 1, 1)  # true counts as 1
    assert tabulate(mapped, mapped.agents[0]).values == (0, 2, 1, 1)
    assert listed.agents[0].function == mapped.agents[0].function


def test_exact_rational_lambdas() -> None:
    spec = loads('[problem]\nparties = 3\nlambda = "3/2"\n' + OBS)
    assert spec.lambdas_exact == (Fraction(3, 2),) * 3
    assert spec.lambdas == (1.5, 1.5, 1.5)
    assert spec.epsilons_exact is None
    mixed = loads('[problem]\nparties = 3\nlambda = ["3/2", 2, "7/3"]\n' + OBS)
    assert mixed.lambdas_exact == (Fraction(3, 2), Fraction(2), Fraction(7, 3))
    assert mixed.lambdas == pytest.approx((1.5, 2.0, 7 / 3), abs=0)
    decimal = loads('[problem]\nparties = 1\nlambda = "1.1"\n[observer]\nfunction = "bit:1"\n')
    assert decimal.lambdas_exact == (Fraction(11, 10),)  # exactly 11/10, not the float 1.1


def test_long_exact_rationals_are_exact_up_to_the_documented_limit() -> None:
    """Issue 17, D13: 61 digits were refused as "not an exact rational"; the limit is
    4,000 digits in the numerator and in the denominator, and the message names it."""
    for digits in (61, 100, 4000):
        num, den = int("7" * digits), int("3" * digits)
        spec = loads(f'[problem]\nparties = 1\nlambda = "{num}/{den}"\n'
                     '[observer]\nfunction = "bit:1"\n')
        assert spec.lambdas_exact == (Fraction(num, den),)
    tiny = "0." + "0" * 53 + "3"  # 3/10^54 as a decimal string: exact
    gain = loads('[problem]\nparties = 1\nlambda = 2\n[observer]\nfunction = "bit:1"\n'
                 f'gain = {{ matrix = [["{tiny}", "0"], ["0", "1"]] }}\n')
    assert tabulate(gain, gain.agents[0]).gain_exact[0][0] == Fraction(3, 10**54)


@pytest.mark.parametrize("python_limit", [4300, 0])  # Python's default; lifted (certify)
def test_an_integer_beyond_pythons_limit_is_bad_input(python_limit) -> None:
    """A 5000-digit TOML integer: tomllib cannot convert it under Python's default limit
    (a ValueError that was an internal error); with the limit lifted (as `certify` lifts
    it for the rest of the process) the number's own limit refuses it. Either way one
    SpecError naming the limit."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(python_limit)
    try:
        with pytest.raises(SpecError, match=r"at most 4,000") as info:
            loads("[problem]\nparties = 3\nlambda = " + "1" * 5000 + "\n" + OBS)
    finally:
        sys.set_int_max_str_digits(old)
    assert info.value.key == ("" if python_limit else "problem.lambda")


def test_a_protocol_kernel_with_55_digit_entries_loads_exactly() -> None:
    """The issue's kernel [[3/10^54, 1 - 3/10^54], [1/10^54, 1 - 1/10^54]] written out as
    integers (55-digit denominators)."""
    q = 10**54
    rows = f'[["3/{q}", "{q - 3}/{q}"], ["1/{q}", "{q - 1}/{q}"]]'
    spec = loads('[problem]\nkind = "protocol"\nparties = 1\nlambda = "3"\n'
                 '[observer]\nfunction = "bit:1"\n'
                 f'[[round]]\nparty = 1\nmessages = 2\nkernel = {rows}\n')
    ((_, kernel),) = spec.rounds[0].kernels
    assert kernel == ((Fraction(3, q), 1 - Fraction(3, q)), (Fraction(1, q), 1 - Fraction(1, q)))


def test_epsilons_per_party_and_zero() -> None:
    spec = loads("[problem]\nparties = 3\nepsilon = [0, 0.5, 1]\n" + OBS)
    assert spec.epsilons_exact == (Fraction(0), Fraction(1, 2), Fraction(1))
    assert spec.lambdas == (1.0, math.exp(0.5), math.e)
    assert spec.lambdas_exact is None
    one = loads('[problem]\nparties = 2\nlambda = 1\n' + OBS)
    assert one.lambdas == (1.0, 1.0)  # lambda = 1 (epsilon 0) is legal


def test_outputs_widen_the_alphabet() -> None:
    spec = loads(HEAD + '[observer]\nfunction = "sum"\ngain = "-square"\n'
                        'outputs = [0, 0.5, 1, 1.5, 2, 2.5, 3]\n')
    table = tabulate(spec, spec.agents[0])
    assert table.outputs == tuple(Fraction(v, 2) for v in range(7))
    # x = 011 has f = 2: gains -(2 - y)^2 for y = 0, 1/2, ..., 3.
    assert table.gain_exact[3] == tuple(-(Fraction(2) - Fraction(v, 2)) ** 2 for v in range(7))
    assert table.gain[3].tolist() == [-4.0, -2.25, -1.0, -0.25, 0.0, -0.25, -1.0]


@pytest.mark.parametrize(("gain", "row_f1"), [
    ('"indicator"', [0, 1, 0, 0]),
    ('"-abs"', [-1, 0, -1, -2]),
    ('"-square"', [-1, 0, -1, -4]),
    ('{ expr = "10 - (f - y) ** 2 if y >= f else 0" }', [0, 10, 9, 6]),
    ("{ matrix = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]] }",
     [5, 6, 7, 8]),
])
def test_gains(gain: str, row_f1: list[int]) -> None:
    """Observer of `sum` (values 0..3, outputs 0..3); x = 001 has f = 1."""
    spec = loads(HEAD + f'[observer]\nfunction = "sum"\ngain = {gain}\n')
    table = tabulate(spec, spec.agents[0])
    assert table.gain_exact[1] == tuple(Fraction(v) for v in row_f1)
    assert table.gain[1].tolist() == [float(v) for v in row_f1]


def test_matrix_gain_rows_follow_the_sorted_function_values() -> None:
    """Rows are for the distinct values sorted: f in {-1, 5} -> row 0 is f = -1."""
    spec = loads("[problem]\nparties = 1\nepsilon = 1.0\n"
                 "[observer]\nfunction = { table = [5, -1] }\n"
                 'gain = { matrix = [[1, 0], [0, "1/3"]] }\n')
    table = tabulate(spec, spec.agents[0])
    assert table.outputs == (-1, 5)
    assert table.gain_exact == ((0, Fraction(1, 3)), (1, 0))


def test_full_problem_and_expectations() -> None:
    spec = loads('''
        [problem]
        name = "demo"
        description = "everything at once"
        kind = "multiparty"
        parties = 3
        epsilon = 1.0
        accuracy = ["worst", "average", "worst"]

        [observer]
        function = "xor"

        [[party]]
        index = 3
        function = "majority"
        gain = "indicator"
        outputs = [0, 1]

        [[party]]
        index = 1
        function = { expr = "x1 and x2" }

        [expect.observer]
        average = 0.5493
        worst = 0.5493
        [expect.party.3]
        average = 0.8
    '''.replace("\n        ", "\n"))
    assert isinstance(spec, MultipartySpec)
    assert (spec.name, spec.description, spec.parties) == ("demo", "everything at once", 3)
    assert spec.accuracies == (Accuracy.WORST, Accuracy.AVERAGE)
    assert [a.name for a in spec.agents] == ["observer", "party:3", "party:1"]
    assert [a.key for a in spec.agents] == ["observer", "party[0]", "party[1]"]
    assert spec.expect == (
        Expectation("observer", "average", 0.5493), Expectation("observer", "worst", 0.5493),
        Expectation("party:3", "average", 0.8),
    )


def test_defaults(write_toml) -> None:
    spec = load(write_toml("[problem]\nparties = 2\nepsilon = 1\n[[party]]\nindex = 2\n"
                           'function = "and"\n', "my-problem"))
    assert spec.name == "my-problem"  # the file name without .toml
    assert spec.accuracies == (Accuracy.AVERAGE, Accuracy.WORST)
    (agent,) = spec.agents
    assert agent.gain.name == "indicator" and agent.outputs is None
    assert spec.expect == ()


def test_large_problems_load_fast_and_untabulated() -> None:
    """Above 12 parties nothing is tabulated at load (the size guard decides first)."""
    import time

    start = time.perf_counter()
    spec = loads("[problem]\nparties = 20\nepsilon = 1\n"
                 '[observer]\nfunction = { expr = "sum(x) % 3" }\n')
    assert time.perf_counter() - start < 0.5
    assert tabulated(spec, spec.agents[0]) is None


# --- garbage in, SpecError out ---------------------------------------------------------------

WORDS = ["problem", "observer", "party", "expect", "index", "function", "gain", "outputs",
         "parties", "epsilon", "lambda", "accuracy", "kind", "name", "description", "expr",
         "table", "matrix", "average", "worst", "1", "2", "00", "01", "x"]
STRINGS = ["xor", "parity", "and", "majority", "sum", "bit:1", "bit:9", "threshold:2",
           "threshold:x", "3/2", "1/0", "-1/2", "1.5", "indicator", "-abs", "-square",
           "average", "worst", "multiparty", "count", "x1 and x2", "f == y", "sum(x)",
           "__import__('os')", "9**9**9**9", "x1.real", "", "\u00b2", "1e400"]


def _toml_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"


def render(document: dict) -> str:
    """Top-level scalars first, then one [header] per table (inline tables below it)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in document.items()
             if not isinstance(v, dict)]
    for k, v in document.items():
        if isinstance(v, dict):
            lines.append(f"[{_toml_key(k)}]")
            lines.extend(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items())
    return "\n".join(lines) + "\n"


scalars = st.one_of(
    st.integers(-3, 70), st.integers(), st.booleans(), st.sampled_from(STRINGS),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.sampled_from(WORDS), inner, max_size=4),
    ),
    max_leaves=12,
)
problem_tables = st.fixed_dictionaries(
    {"parties": st.one_of(st.integers(0, 4), scalars)},
    optional={"epsilon": values, "lambda": values, "accuracy": values, "kind": values,
              "name": values, "description": values, "typo": values},
)
agent_tables = st.fixed_dictionaries(
    {"function": st.one_of(st.sampled_from(STRINGS), values)},
    optional={"gain": values, "outputs": values, "index": st.one_of(st.integers(-1, 5), values),
              "extra": values},
)
documents = st.fixed_dictionaries(
    {},
    optional={"problem": st.one_of(problem_tables, values), "observer": agent_tables,
              "party": st.lists(agent_tables, max_size=3),
              "expect": st.dictionaries(st.sampled_from(WORDS), values, max_size=3),
              "junk": values},
)


NAMES_K = ["xor", "parity", "and", "or", "majority", "sum", "threshold:1", "bit:1", "bit:2"]
EXPRS = ["x1 and x2", "sum(x) % 2", "x1 if k > 1 else 0", "max(x) - min(x)", "1 // x1",
         "x9", "2 ** 300"]
GAIN_EXPRS = ["f == y", "-(f - y) ** 2", "y // f", "abs(f - y) * 3"]


@st.composite
def valid_documents(draw):
    """Documents close to valid (so that the loader's deeper checks are reached)."""
    k = draw(st.integers(1, 3))
    n = 1 << k
    number = st.one_of(st.floats(0, 3), st.sampled_from(["3/2", "1", "5/4", 2]))
    problem: dict = {"parties": k}
    if draw(st.booleans()):
        problem["epsilon"] = draw(st.one_of(st.floats(0, 2), st.lists(st.floats(0, 2),
                                                                     min_size=k, max_size=k)))
    else:
        problem["lambda"] = draw(st.one_of(number, st.lists(number, min_size=k, max_size=k)))
    if draw(st.booleans()):
        problem["accuracy"] = draw(st.sampled_from(["average", "worst", ["worst", "average"]]))

    def agent() -> dict:
        out: dict = {"function": draw(st.one_of(
            st.sampled_from(NAMES_K[: 7] + [f"bit:{k}"]),
            st.builds(lambda e: {"expr": e}, st.sampled_from(EXPRS)),
            st.builds(lambda t: {"table": t}, st.lists(st.integers(0, 2), min_size=n,
                                                       max_size=n)),
            st.builds(lambda t: {"table": {format(i, f"0{k}b"): v for i, v in enumerate(t)}},
                      st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        ))}
        if draw(st.booleans()):
            out["gain"] = draw(st.one_of(
                st.sampled_from(["indicator", "-abs", "-square"]),
                st.builds(lambda e: {"expr": e}, st.sampled_from(GAIN_EXPRS)),
                st.builds(lambda m: {"matrix": m},
                          st.lists(st.lists(st.integers(-2, 2), min_size=2, max_size=2),
                                   min_size=1, max_size=3)),
            ))
        if draw(st.booleans()):
            out["outputs"] = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4,
                                           unique=True))
        return out

    document: dict = {"problem": problem}
    if draw(st.booleans()):
        document["observer"] = agent()
    parties = draw(st.lists(st.integers(1, k), max_size=2, unique=True))
    if parties or "observer" not in document:
        document["party"] = [{"index": i, **agent()} for i in parties or [1]]
    if draw(st.booleans()):
        document["expect"] = {"observer": {"average": draw(st.floats(0, 1))}}
    return document


def _paths(node, prefix=()):
    """Every (container, key) in a document, to mutate."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, child in list(items):
        yield node, key
        if isinstance(child, (dict, list)):
            yield from _paths(child, prefix + (key,))


@st.composite
def mutated_documents(draw):
    document = draw(valid_documents())
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(document))
        if not paths:  # everything was deleted already
            break
        container, key = paths[draw(st.integers(0, len(paths) - 1))]
        action = draw(st.sampled_from(["replace", "delete", "typo"]))
        if action == "delete" and isinstance(container, dict):
            del container[key]
        elif action == "typo" and isinstance(container, dict):
            container[str(key) + "s"] = container.pop(key)
        else:
            container[key] = draw(values)
    return document


def _loads_or_spec_error(text: str) -> None:
    try:
        loads(text, source="garbage.toml")
    except SpecError as exc:
        assert str(exc).startswith("garbage.toml: ")
        assert "\n" not in str(exc)
    except SizeLimitError as exc:  # parties above the loader's limit: exit 3, by design
        assert "parties" in str(exc)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_garbage_documents_raise_only_spec_errors(document) -> None:
    _loads_or_spec_error(render(document))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_mutated_documents_raise_only_spec_errors(document) -> None:
    _loads_or_spec_error(render(document))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_documents())
def test_valid_documents_mostly_load(document) -> None:
    """The generator's base documents reach the end of the loader (or fail on purpose:
    random matrices of the wrong shape, expressions that divide by zero or use x9)."""
    _loads_or_spec_error(render(document))


@settings(max_examples=examples(150), deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]{}=".,\n abc123-+_:#\'\\e')), max_size=60))
def test_garbage_text_raises_only_spec_errors(text) -> None:
    _loads_or_spec_error(text)


def test_render_produces_the_documents_it_is_given() -> None:
    """The garbage generator is valid TOML when its values are (so it reaches the loader)."""
    import tomllib

    document = {"problem": {"parties": 3, "epsilon": [1.0, "3/2", True]},
                "observer": {"function": {"table": [0, 1]}}, "n": -1.5}
    assert tomllib.loads(render(document)) == document


def test_the_named_functions_are_one_definition_on_bits_symbols_and_counts():
    """spec/functions.py defines each named function once: tabulated on bits, on symbols
    with every alphabet 2, and as a function of the number of ones, the values agree
    (and `and`/`or` are `min`/`max` of the bits)."""
    from itertools import product

    from dpverify.spec.functions import named_count_value, named_values
    from dpverify.spec.tables import input_bits, named_function_values

    for k in range(1, 6):
        bits = input_bits(k)
        names = [("xor", 0), ("and", 0), ("or", 0), ("majority", 0), ("sum", 0)]
        names += [("threshold", t) for t in range(k + 1)] + [("bit", i) for i in range(1, k + 1)]
        for name, param in names:
            table = named_function_values(name, param, k)
            symbols = {"and": "min", "or": "max"}.get(name, name)
            assert table == named_values(symbols, param, bits, (2,) * k), (name, k)
            if name != "bit":
                assert table == [named_count_value(name, param, int(sum(row)), k)
                                 for row in bits.tolist()], (name, k)
        by_hand = {"and": [int(all(x)) for x in product((0, 1), repeat=k)],
                   "majority": [int(2 * sum(x) > k) for x in product((0, 1), repeat=k)]}
        for name, values in by_hand.items():
            assert named_function_values(name, 0, k) == values


def test_bit_is_not_a_function_of_the_count():
    from dpverify.spec.functions import named_count_value

    with pytest.raises(ValueError, match="count of ones"):
        named_count_value("bit", 1, 1, 3)
    with pytest.raises(ValueError, match="count of ones"):
        named_count_value("max", 0, 1, 3)  # a name of symbols: not of bits either


@pytest.mark.parametrize("function", ["max", "min", "xor", "mod:2", "majority", "sum"])
def test_a_named_function_of_symbols_beyond_the_load_tabulation_loads(function):
    """Beyond 12 parties the loader checks functions of the number of ones without a
    table; those are functions of bits: a named function of symbols there (13 parties,
    one with three symbols) was an internal error (`'max' is not a function of the count
    of ones`, exit 4). It loads, and is tabulated when verified."""
    text = ("[problem]\nparties = 13\nalphabet = [3" + ", 2" * 12 + "]\nepsilon = 1\n"
            f'[observer]\nfunction = "{function}"\n')
    spec = loads(text)
    assert not spec.binary and spec.agents[0].function.name == function.split(":")[0]
    # control: on 13 bits the count check runs (and refuses a bad gain of the counts)
    bits = text.replace("alphabet = [3" + ", 2" * 12 + "]\n", "").replace(
        f'"{function}"', '"majority"\ngain = { matrix = [[1, 0]] }')
    with pytest.raises(SpecError, match="gain"):
        loads(bits)
