"""The methods of a problem on bits as objects (issue 18 point 2) and the route `auto`
takes (issue 19 point 1): one choice for `verify`, `certify` and settling, refusals that
name their limits, the fallback when a route does not decide, `--cross-check`, and the
corner LP's form chosen by size."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

import dpverify
from dpverify.cli import main
from dpverify.defaults import LpForm, Method
from dpverify.errors import SizeLimitError
from dpverify.policy import ALL_INPUTS_PARTIES, DENSE_BELOW_PARTIES
from dpverify.reasons import ReasonCode
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.multiparty.all_inputs import PROOF
from dpverify.verifiers.multiparty.corner_lp import LP, form_nonzeros, lp_form
from dpverify.verifiers.multiparty.orbit import ORBIT
from dpverify.verifiers.multiparty.planner import certificate_for, choose_method
from dpverify.verifiers.multiparty.reductions import AgentProblem
from dpverify.verifiers.options import VerifyOptions, option_problem
from dpverify.verifiers.result import AgentResult, Verdict

OPTIONS = VerifyOptions()


def spec_of(parties: int, levels: str, *agents: str):
    return loads(f"[problem]\nname = \"p\"\nparties = {parties}\n{levels}\n" + "".join(agents))


def distinct(k: int) -> str:
    """Privacy levels no two parties share: no symmetry to reduce by."""
    return "lambda = " + json.dumps([f"{i + 2}/{i + 1}" for i in range(k)])


OBSERVER_MAJORITY = '[observer]\nfunction = "majority"\n'
PARTY_SUM = '[[party]]\nindex = 1\nfunction = "sum"\ngain = "-abs"\n'
SPECS = {  # name: (spec, the method `auto` takes for every agent)
    "small symmetric": (spec_of(4, 'lambda = "2"', OBSERVER_MAJORITY, PARTY_SUM), "proof"),
    "small distinct": (spec_of(5, distinct(5), OBSERVER_MAJORITY), "proof"),
    "symmetric beyond": (spec_of(ALL_INPUTS_PARTIES + 1, "epsilon = 1.0", OBSERVER_MAJORITY,
                                 PARTY_SUM), "orbit"),
    "18 symmetric": (spec_of(18, 'lambda = "3"', OBSERVER_MAJORITY), "orbit"),
    "14 distinct": (spec_of(14, distinct(14), OBSERVER_MAJORITY), "proof"),
    "200 symmetric": (spec_of(200, 'lambda = "2"', OBSERVER_MAJORITY), "orbit"),
}


class Chosen(Exception):
    """Raised by a spied route's exact(): which route the certificate came from."""


def fits(route, spec, agent, accuracy, options):
    return route.fits(AgentProblem(spec, agent, accuracy, options))


def spy_certificates(monkeypatch) -> None:
    for route in (PROOF, ORBIT):
        def built(*args, _method=route.method, **kwargs):
            raise Chosen(_method)

        monkeypatch.setattr(route, "exact", built)


def certified_by(spec, agent, accuracy, options) -> str:
    with pytest.raises(Chosen) as chosen:
        certificate_for(spec, agent, accuracy, None, options)
    return str(chosen.value)


@pytest.mark.parametrize("name", list(SPECS))
def test_certify_and_verify_choose_the_same_method(name, monkeypatch):
    """The chooser is the only one: for every agent and accuracy, `certify` (and the exact
    settling, which builds its certificate the same way) takes the method `verify` takes,
    under `auto` and when a limit takes the first choice away."""
    spec, expected = SPECS[name]
    spy_certificates(monkeypatch)
    for options in (OPTIONS, VerifyOptions(max_orbit_work=10), VerifyOptions(method="proof"),
                    VerifyOptions(method="orbit")):
        for agent in spec.agents:
            for accuracy in spec.accuracies:
                try:
                    method, _ = choose_method(spec, agent, accuracy, options)
                except SizeLimitError as refused:  # then certify refuses alike
                    with pytest.raises(SizeLimitError) as also:
                        certificate_for(spec, agent, accuracy, None, options)
                    assert str(refused).startswith(str(also.value))  # verify adds the LP's
                    continue
                assert certified_by(spec, agent, accuracy, options) == method, (
                    name, options, agent.name, accuracy)
                if options is OPTIONS:
                    assert method == expected


def test_a_symmetric_problem_past_the_orbit_limit_gets_one_method(monkeypatch):
    """The regression of the two choosers (`methods.choose` at 20 parties,
    `certify.use_orbit_certificate` at 16 without the work limit): a symmetric problem at
    18 parties whose orbit work exceeds --max-orbit-work was verified by `proof` while its
    certificate was the orbit one, refused on the orbit limit. Now both take `proof`."""
    spec, _ = SPECS["18 symmetric"]
    options = VerifyOptions(max_orbit_work=10)
    agent = spec.agents[0]
    assert choose_method(spec, agent, Accuracy.AVERAGE, options)[0] == "proof"
    assert fits(ORBIT, spec, agent, Accuracy.AVERAGE, options) is not None
    assert fits(PROOF, spec, agent, Accuracy.AVERAGE, options) is None
    spy_certificates(monkeypatch)  # (building it takes 20 s at k = 18)
    assert certified_by(spec, agent, Accuracy.AVERAGE, options) == "proof"
    for accuracy in Accuracy.AVERAGE, Accuracy.WORST:  # the default limit: orbits for both
        assert choose_method(spec, agent, accuracy, OPTIONS)[0] == "orbit"
        assert certified_by(spec, agent, accuracy, OPTIONS) == "orbit"


# -- refusals: each names its limit ---------------------------------------------------------
def test_fits_accepts_what_each_route_can_take():
    spec = spec_of(4, 'lambda = "2"', OBSERVER_MAJORITY)
    agent = spec.agents[0]
    for route in (LP, ORBIT, PROOF):
        assert fits(route, spec, agent, Accuracy.WORST, OPTIONS) is None, route.method


def test_fits_refusals_name_their_limits():
    big = spec_of(12, 'lambda = "2"', '[observer]\nfunction = "xor"\n')
    why = fits(LP, big, big.agents[0], Accuracy.WORST, OPTIONS)
    assert why is not None and "non-zeros" in why and "--max-nonzeros" in why
    assert f"{OPTIONS.nonzero_limit:,}" in why
    huge = spec_of(21, 'lambda = "2"', OBSERVER_MAJORITY)
    assert "2^21 inputs are too many" in fits(LP, huge, huge.agents[0], Accuracy.WORST, OPTIONS)
    assert "at most 20 parties" in fits(PROOF, huge, huge.agents[0], Accuracy.WORST, OPTIONS)
    odd = spec_of(5, distinct(5), OBSERVER_MAJORITY)
    assert "no symmetry" in fits(ORBIT, odd, odd.agents[0], Accuracy.WORST, OPTIONS)
    tight = VerifyOptions(max_orbit_work=10)
    why = fits(ORBIT, huge, huge.agents[0], Accuracy.WORST, tight)
    assert why is not None and "--max-orbit-work" in why and "the limit is 10 " in why


def test_no_route_fits_names_every_limit():
    none = spec_of(25, distinct(25), OBSERVER_MAJORITY)
    with pytest.raises(SizeLimitError) as info:
        choose_method(none, none.agents[0], Accuracy.AVERAGE, OPTIONS)
    message = str(info.value)
    assert "no method fits" in message
    for part in ("orbit: the function has no symmetry", "proof: the certificate on all "
                 "inputs takes at most 20 parties", "lp: 2^25 inputs are too many"):
        assert part in message
    with pytest.raises(SizeLimitError, match="at most 20 parties"):  # one route asked for
        choose_method(none, none.agents[0], Accuracy.AVERAGE, VerifyOptions(method="proof"))


# -- auto: the proof first, the next route when one does not decide -------------------------
XOR4 = spec_of(4, "epsilon = 1.0", '[observer]\nfunction = "xor"\n',
               '[[party]]\nindex = 2\nfunction = "and"\n')


def test_auto_takes_the_proof_and_lp_still_solves_the_lp():
    auto = verify_spec(XOR4, OPTIONS)
    assert auto.verdict is Verdict.OPTIMAL and {r.method for r in auto.results} == {"proof"}
    assert all(r.proof is not None and r.proof.bracket.checked for r in auto.results)
    lp = verify_spec(XOR4, VerifyOptions(method="lp"))
    assert {r.method for r in lp.results} == {"lp"}
    for a, b in zip(auto.results, lp.results, strict=True):
        assert a.relaxed_optimum == pytest.approx(b.relaxed_optimum, abs=1e-9)


def test_auto_falls_back_when_a_route_does_not_decide(monkeypatch):
    """The proof route undecided (simulated): `auto` takes the next route that fits (the
    orbit method for a symmetric problem, else the LP), and the reason says so;
    `--method proof` has no other route: error."""
    real = PROOF.run

    def undecided(problem, hints):
        out = real(problem, hints)
        return replace(out, result=replace(out.result, verdict=Verdict.ERROR,
                                           reason="undecided: simulated"))

    monkeypatch.setattr(PROOF, "run", undecided)
    odd = spec_of(4, distinct(4), '[observer]\nfunction = "xor"\n')
    for spec, then in ((XOR4, "orbit"), (odd, "lp")):
        result = verify_spec(spec, OPTIONS)
        assert result.verdict is Verdict.OPTIMAL
        for r in result.results:
            assert r.method == then
            assert f"method proof did not decide (undecided: simulated): method {then}" \
                in r.reason
    alone = verify_spec(XOR4, VerifyOptions(method="proof"))
    assert alone.verdict is Verdict.ERROR


def test_interior_points_take_the_lp_first():
    spec = spec_of(3, "epsilon = 1.0", '[observer]\nfunction = "xor"\n')
    (r, _) = verify_spec(spec, VerifyOptions(grid=3)).results
    assert r.method == "lp" and r.interior is not None and r.interior.grid == 3


# -- --cross-check ----------------------------------------------------------------------------
def test_cross_check_agrees_on_both_routes():
    result = verify_spec(XOR4, VerifyOptions(cross_check=True))
    assert result.verdict is Verdict.OPTIMAL
    for r in result.results:
        assert r.method == "proof" and r.cross_check is not None and r.cross_check.agrees
        assert r.cross_check.method == "lp" and r.cross_check.verdict is Verdict.OPTIMAL
        assert "cross-check: method lp" in r.reason and "agrees" in r.reason
        data = r.to_json()["cross_check"]
        assert data["agrees"] is True and data["method"] == "lp"
    lp_first = verify_spec(XOR4, VerifyOptions(cross_check=True, method="lp"))
    for r in lp_first.results:
        assert r.method == "lp" and r.cross_check.method == "proof" and r.cross_check.agrees


@pytest.mark.parametrize("shift", [1e-3, 0.0])
def test_cross_check_catches_a_forced_disagreement(monkeypatch, shift):
    """The LP's value moved by 1e-3 (simulated): verdict `error`, the reason naming both
    routes' values; a shift of 0 (the negative control) agrees."""
    real = LP.run

    def moved(problem, hints):
        out = real(problem, hints)
        r: AgentResult = out.result
        return replace(out, result=replace(r, bound=r.bound + shift))

    monkeypatch.setattr(LP, "run", moved)
    result = verify_spec(XOR4, VerifyOptions(cross_check=True))
    for r in result.results:
        assert r.cross_check is not None and r.cross_check.agrees is (shift == 0)
        if shift:
            assert r.verdict is Verdict.ERROR and r.code is ReasonCode.CROSS_CHECK_DISAGREES
            assert f"{r.relaxed_optimum:.12g}" in r.reason
            assert f"{r.cross_check.relaxed_optimum:.12g}" in r.reason
            assert abs(r.cross_check.relaxed_optimum - r.relaxed_optimum - shift) < 1e-12
        else:
            assert r.verdict is Verdict.OPTIMAL
    assert result.verdict is (Verdict.ERROR if shift else Verdict.OPTIMAL)


def test_cross_check_catches_another_verdict(monkeypatch):
    real = LP.run
    monkeypatch.setattr(LP, "run", lambda *a: replace(
        real(*a), result=replace(real(*a).result, verdict=Verdict.GAP)))
    result = verify_spec(XOR4, VerifyOptions(cross_check=True))
    assert all(r.verdict is Verdict.ERROR and r.code is ReasonCode.CROSS_CHECK_DISAGREES
               and "(gap)" in r.reason for r in result.results)


def test_cross_check_refuses_before_any_work_when_the_lp_does_not_fit():
    spec = spec_of(12, 'lambda = "2"', '[observer]\nfunction = "xor"\n')
    assert verify_spec(spec, OPTIONS).verdict is Verdict.OPTIMAL
    with pytest.raises(SizeLimitError, match="--max-nonzeros"):
        verify_spec(spec, VerifyOptions(cross_check=True))


def test_cross_check_from_the_command_line_and_the_api(write_toml):
    path = write_toml('[problem]\nname = "x"\nparties = 3\nepsilon = 1.0\n[observer]\n'
                      'function = "xor"\n', "x")
    run = CliRunner().invoke(main, ["verify", "--cross-check", "--json", str(path)])
    assert run.exit_code == 0, run.output
    (problem,) = json.loads(run.stdout)
    assert all(r["cross_check"]["agrees"] for r in problem["results"])
    api = dpverify.verify(dpverify.load(path), cross_check=True).to_dict()
    assert [r["cross_check"] for r in api["results"]] == \
        [r["cross_check"] for r in problem["results"]]
    assert option_problem("cross_check", "yes") is not None


# -- --lp-form auto ---------------------------------------------------------------------------
def test_lp_form_auto_is_dense_for_small_problems_that_fit():
    small = spec_of(4, "epsilon = 1.0", OBSERVER_MAJORITY)
    agent = small.agents[0]
    assert lp_form(small, agent, OPTIONS, 2) is LpForm.DENSE
    dense = form_nonzeros(small, agent, OPTIONS, 2, LpForm.DENSE)
    tight = VerifyOptions(max_nonzeros=dense - 1)  # dense no longer fits: chain
    assert lp_form(small, agent, tight, 2) is LpForm.CHAIN
    at = spec_of(DENSE_BELOW_PARTIES, "epsilon = 1.0", OBSERVER_MAJORITY)
    assert lp_form(at, at.agents[0], VerifyOptions(max_nonzeros=10**12), 2) is LpForm.CHAIN
    for form in ("chain", "dense"):  # named forms are kept
        assert lp_form(small, agent, VerifyOptions(form=form), 2) == form
    assert option_problem("lp_form", "auto") is None
    assert "allowed: auto, chain, dense" in option_problem("lp_form", "sparse")


def test_every_lp_form_gives_the_same_values():
    values = {}
    for form in ("auto", "chain", "dense"):
        result = verify_spec(XOR4, VerifyOptions(method="lp", form=form))
        values[form] = [r.relaxed_optimum for r in result.results]
    for form in ("chain", "dense"):
        assert values[form] == pytest.approx(values["auto"], abs=1e-9)


def test_the_store_key_keeps_plain_values():
    key = VerifyOptions().key()
    assert key["form"] == "auto" and key["method"] == "auto" and "cross_check" not in key
    assert type(key["form"]) is str and type(key["method"]) is str
    assert VerifyOptions(cross_check=True).key()["cross_check"] is True


METHOD_NAMES = {m.value for m in Method} | {f.value for f in LpForm}


def _method_literals(path) -> list[str]:
    """Method and LP-form names written as string literals where they name a method: in a
    comparison (with a tuple's elements), a default or keyword `method`/`form`, or an
    assignment to such a name (a JSON field or a column called "proof" is not a method
    name)."""
    import ast

    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def named(target: str) -> bool:
        return any(w in target.lower() for w in ("method", "form"))

    for node in ast.walk(tree):
        values: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            for v in (node.left, *node.comparators):
                values += list(v.elts) if isinstance(v, ast.Tuple | ast.List | ast.Set) else [v]
        elif isinstance(node, ast.keyword) and node.arg and named(node.arg):
            values = [node.value]
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and named(t.id) for t in targets):
                values = [node.value] if node.value is not None else []
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args  # defaults close both
            args = positional[len(positional) - len(node.defaults):] + node.kwonlyargs
            defaults = [*node.defaults, *node.kw_defaults]
            values = [d for a, d in zip(args, defaults, strict=True) if d is not None
                      and named(a.arg)]
        for v in values:
            if isinstance(v, ast.Constant) and v.value in METHOD_NAMES:
                found.append(f"{path}:{v.lineno}: {v.value!r}")
    return found


def test_method_names_live_in_defaults():
    """No method or LP-form name as a string literal outside defaults.py (issue 18): the
    code names them through `Method` and `LpForm`."""
    from pathlib import Path

    package = Path(dpverify.__file__).parent
    found = [hit for path in sorted(package.rglob("*.py"))
             if path != package / "defaults.py" for hit in _method_literals(path)]
    assert found == []


def test_the_literal_scan_finds_a_method_name(tmp_path):
    """Negative control of the scan above."""
    probe = tmp_path / "probe.py"
    probe.write_text('def f(method="auto"):\n    return method == "lp" or form in ("chain",)\n',
                     encoding="utf-8")
    assert len(_method_literals(probe)) == 3
