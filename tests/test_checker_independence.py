"""The checker keeps no state between certificates (issue 17, A0).

Problem: 18 parties, lambda 2 or 3, the observer wants a score of the yes votes under
`-abs`. Certificate A is the orbit certificate `certify` writes (classes: the lambda-2
parties, then the lambda-3 parties). Certificate B lists the two classes the other way
round but keeps A's orbit gain table: it certifies a different problem (proved value
-181921/262144 instead of A's). Certificate C lists the classes the other way round with
everything recomputed for that order: the same problem, the same value as A.

Before the fix `check-cert problem A B` accepted B (the orbit checker read the
construction's orbit table, cached per spec and agent whatever the classes), while
`check-cert problem B` rejected it. Every order, in one process or in separate ones, must
give the same answers.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from fractions import Fraction

import pytest
from click.testing import CliRunner

from dpverify.checker import check_certificate
from dpverify.cli import main
from dpverify.spec import load, loads
from dpverify.spec.symmetric import Symmetry, agent_symmetry, orbit_table
from dpverify.theory.orbits.certificates import OrbitProblem, average_certificate
from dpverify.verifiers.certifiers import certify_agent, dump_certificate

PROBLEM = """
[problem]
name = "a0"
parties = 18
lambda = ["2", "3", "2", "3", "2", "3", "2", "3", "2", "3", "2", "2", "2", "2", "3", "3", "2", "2"]
accuracy = "average"

[observer]
function = { counts = [0, 0, 1, 1, 2, 2, 2, 1, 0, 0, 1, 2, 2, 2, 1, 1, 0, 0, 2] }
gain = "-abs"
"""
A_VALUE = Fraction(-131652828885637, 190210142896128)
B_VALUE = Fraction(-181921, 262144)


def _swapped_certificate(spec, table) -> dict:
    """The classes in the other order, with the orbit gain table `table` (A's for B, the
    swapped order's for C), and the proof built for that table."""
    agent = spec.agents[0]
    classes = tuple(reversed(agent_symmetry(spec, agent).classes))
    lambdas = [spec.lambdas_exact[c[0] - 1] for c in classes]
    problem = OrbitProblem(classes, table.outputs, table.gain_exact, None)
    return average_certificate(agent.name, problem, lambdas, lambdas, True).to_json(spec.name)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> dict:
    """{name: (path, certificate)} for A, B and C, and the problem file."""
    folder = tmp_path_factory.mktemp("a0")
    problem = folder / "a0.toml"
    problem.write_text(PROBLEM, encoding="utf-8")
    spec = loads(PROBLEM, source=str(problem))
    agent = spec.agents[0]
    a = certify_agent(spec, agent, "average")
    assert a["format"] == "dpverify-orbit-certificate/1" and a["status"] == "proved-optimal"
    symmetry = agent_symmetry(spec, agent)
    fresh = loads(PROBLEM)  # a spec of its own: no table cached for it yet
    swapped = Symmetry(tuple(reversed(symmetry.classes)))
    out = {"A": a, "B": _swapped_certificate(spec, orbit_table(spec, agent, symmetry)),
           "C": _swapped_certificate(spec, orbit_table(fresh, fresh.agents[0], swapped))}
    assert out["B"]["classes"] == out["C"]["classes"] == a["classes"][::-1]
    assert out["B"]["gain"] == a["gain"] != out["C"]["gain"]
    assert Fraction(out["B"]["lower"]["value"]) == B_VALUE  # a proof of another problem
    files = {}
    for name, cert in out.items():
        path = folder / f"{name}.cert.json"
        path.write_text(dump_certificate(cert), encoding="utf-8")
        files[name] = (path, json.loads(path.read_text(encoding="utf-8")))
    files["problem"] = (problem, None)
    return files


EXPECTED = {"A": (True, A_VALUE), "B": (False, None), "C": (True, A_VALUE)}


def _answer(result) -> tuple[bool, Fraction | None]:
    return result.ok, result.value


def test_each_certificate_alone(certificates):
    """A fresh spec per certificate: A and C prove A's value, B is refused for its gains."""
    path = certificates["problem"][0]
    for name, (ok, value) in EXPECTED.items():
        result = check_certificate(load(path), certificates[name][1])
        assert _answer(result) == (ok, value), (name, result.message)
    b = check_certificate(load(path), certificates["B"][1])
    assert "the gain table differs from the spec's" in b.message


@pytest.mark.parametrize("order", list(itertools.permutations("ABC")),
                         ids=lambda o: "".join(o))
def test_every_order_in_one_process_with_one_spec(certificates, order):
    """One spec object for all three (as check-cert loads it once), in every order: the
    answers are those of each certificate alone. Before the fix, B after A was accepted."""
    spec = load(certificates["problem"][0])
    for name in order:
        result = check_certificate(spec, certificates[name][1])
        assert _answer(result) == EXPECTED[name], (order, name, result.message)


def test_the_construction_tables_do_not_sway_the_checker(certificates):
    """The construction's caches filled with A's orbit table (what `verify` leaves behind)
    before B is checked: B is still refused."""
    spec = load(certificates["problem"][0])
    agent = spec.agents[0]
    orbit_table(spec, agent, agent_symmetry(spec, agent))
    assert not check_certificate(spec, certificates["B"][1]).ok


def test_check_cert_in_one_process_every_order(certificates):
    """`check-cert problem A B C` and every other order: B fails (exit 1), A and C pass."""
    problem = str(certificates["problem"][0])
    for order in itertools.permutations("ABC"):
        args = ["check-cert", problem, *(str(certificates[n][0]) for n in order), "--json"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 1, (order, out.output)
        verdicts = {o["path"]: o["ok"] for o in json.loads(out.output)}
        assert verdicts == {str(certificates[n][0]): EXPECTED[n][0] for n in "ABC"}, order


def test_check_cert_in_separate_processes(certificates):
    """One process per certificate gives the same answers as one process for all."""
    problem = str(certificates["problem"][0])
    for name in "ABC":
        done = subprocess.run([sys.executable, "-m", "dpverify", "check-cert", problem,
                               str(certificates[name][0])], capture_output=True, text=True)
        ok, _ = EXPECTED[name]
        assert done.returncode == (0 if ok else 1), (name, done.stdout, done.stderr)
        assert done.stdout.startswith("OK " if ok else "FAIL "), done.stdout


def test_orbit_table_is_keyed_by_the_classes(certificates):
    """spec.symmetric.orbit_table: one table per symmetry, never the first one asked for."""
    spec = load(certificates["problem"][0])
    agent = spec.agents[0]
    symmetry = agent_symmetry(spec, agent)
    swapped = Symmetry(tuple(reversed(symmetry.classes)))
    first = orbit_table(spec, agent, symmetry)
    second = orbit_table(spec, agent, swapped)
    fresh = loads(PROBLEM)
    assert second.gain_exact == orbit_table(fresh, fresh.agents[0], swapped).gain_exact
    assert first.gain_exact != second.gain_exact
    assert orbit_table(spec, agent, symmetry) is first  # still cached per classes
    # the swapped table is A's table with the two weights exchanged
    n0, n1 = symmetry.sizes
    for w0 in range(n0 + 1):
        for w1 in range(n1 + 1):
            assert first.gain_exact[w0 * (n1 + 1) + w1] == second.gain_exact[w1 * (n0 + 1) + w0]


def test_the_checker_reads_no_table_of_the_construction(certificates, monkeypatch):
    """The checker tabulates afresh: with the spec layer's cached tables and the
    construction's symmetry code made unusable, every certificate gets the same answer."""
    from dpverify.spec import symmetric, tables

    def refuse(*args, **kwargs):
        raise AssertionError("the checker used a table of the construction")

    for module, name in ((tables, "tabulate"), (tables, "tabulated"),
                         (symmetric, "orbit_table"), (symmetric, "agent_symmetry"),
                         (symmetric, "count_values")):
        monkeypatch.setattr(module, name, refuse)
    spec = load(certificates["problem"][0])
    for name in "ABC":
        assert _answer(check_certificate(spec, certificates[name][1])) == EXPECTED[name]
    text = '[problem]\nname = "m"\nparties = 3\nlambda = "2"\n[observer]\nfunction = "sum"\n'
    monkeypatch.undo()
    cert = certify_agent(loads(text), loads(text).agents[0], "worst")
    monkeypatch.setattr(tables, "tabulate", refuse)
    monkeypatch.setattr(tables, "tabulated", refuse)
    assert check_certificate(loads(text), cert).ok
