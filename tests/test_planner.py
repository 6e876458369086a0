"""The planner of multi-party problems on bits (verifiers/multiparty/planner.py; issue 24
point 2): the reductions, the one loop, the hints one route hands to the next so that no
float LP is solved twice, the settling by the makers the planner gives, and `--method`
read in one place."""

from __future__ import annotations

from fractions import Fraction

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.defaults import Method
from dpverify.lp.solve import solve as highs
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.verifiers.multiparty.all_inputs import PROOF
from dpverify.verifiers.multiparty.corner_lp import LP
from dpverify.verifiers.multiparty.hints import Hints
from dpverify.verifiers.multiparty.orbit import (
    ORBIT,
    exact_orbit_certificate,
    interval_orbit_certificate,
)
from dpverify.verifiers.multiparty.planner import (
    certificate_routes,
    hints_for,
    plan,
    verify_agent,
)
from dpverify.verifiers.multiparty.reductions import GAIN_UNITS, SYMMETRY, AgentProblem
from dpverify.verifiers.multiparty.routes import wanted
from dpverify.verifiers.multiparty.settle import settle
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict

MAJORITY6 = ('[problem]\nname = "m"\nparties = 6\nlambda = ["2","2","2","3","3","3"]\n'
             'accuracy = "worst"\n[observer]\nfunction = "majority"\n')
DISTINCT6 = ('[problem]\nname = "d"\nparties = 6\nepsilon = [0.5,0.6,0.7,0.8,0.9,1.0]\n'
             'accuracy = "worst"\n[observer]\nfunction = "majority"\n')


def spy(calls: list):
    def engine(lp, backend="highs", **kw):
        calls.append(lp.name)
        return highs(lp, backend, **kw)

    return engine


def problem_of(text: str, **options) -> AgentProblem:
    spec = loads(text)
    return AgentProblem(spec, spec.agents[0], spec.accuracies[0], VerifyOptions(**options))


# -- the reductions ------------------------------------------------------------------------
def test_the_gain_units_reduction_inverts_to_the_users_units():
    text = MAJORITY6.replace('function = "majority"', 'function = "majority"\n'
                             'gain = { matrix = [[7, 3], [3, 7]] }')
    problem = problem_of(text)
    assert GAIN_UNITS.accepts(problem) is None
    units = GAIN_UNITS.apply(problem)
    assert units.unit.min() == 0 and units.unit.max() == 1
    assert GAIN_UNITS.invert(units, 0.5) == pytest.approx(5.0)


@pytest.mark.parametrize("function", ["majority", "sum", "parity", "threshold:4"])
def test_a_symmetric_problems_tolerance_comes_from_its_orbits(function, monkeypatch):
    """The tolerance (relative to the gains' range) from the table on orbits equals the
    one from all inputs, and a symmetric problem's tolerance tabulates no input (at k = 20
    that was 3 of 4 s). Control: without a symmetry the inputs are tabulated."""
    import dpverify.verifiers.multiparty.reductions as reductions

    text = MAJORITY6.replace('"majority"', f'"{function}"\ngain = {{ expr = '
                             '"3 if f == y else (-1 if y > f else 0)" }')
    full = problem_of(text, tol=1e-6)
    expected = full.units.tolerance(1e-6)
    assert expected > 0 and full.tol == expected
    calls: list[int] = []

    def counted(spec, agent):
        calls.append(1)
        return reductions.tabulate(spec, agent)

    monkeypatch.setattr(reductions.AgentProblem, "table", property(
        lambda self: counted(self.spec, self.agent)))
    assert problem_of(text, tol=1e-6).tol == expected and calls == []
    assert problem_of(DISTINCT6).tol > 0 and calls == [1]


def test_the_symmetry_reduction_accepts_only_a_problem_it_reduces():
    problem = problem_of(MAJORITY6)
    assert SYMMETRY.accepts(problem) is None
    orbits, classes = SYMMETRY.apply(problem)
    assert classes.classes == ((1, 2, 3), (4, 5, 6)) and len(orbits.gain) == 16  # 4 x 4
    assert SYMMETRY.invert(Fraction(1, 3)) == Fraction(1, 3)
    odd = problem_of(DISTINCT6)  # no two parties alike: nothing to reduce by
    assert "no symmetry" in SYMMETRY.accepts(odd)
    assert "no symmetry" in ORBIT.fits(odd)


# -- no float LP solved twice ----------------------------------------------------------------
def test_the_interval_and_the_exact_orbit_certificate_share_one_float_lp(monkeypatch):
    """The symmetric worst case: the interval certificate solves the worst-case LP on
    orbits (by the dense interior-point method, theory/worst_hints.py); the exact
    certificate at the same (fine) brackets takes its solution from the hints. The
    control: fresh hints solve it again."""
    from dpverify.theory import worst_hints

    solved: list = []
    dense = worst_hints.dense_worst
    monkeypatch.setattr(worst_hints, "dense_worst",
                        lambda lp, **kw: solved.append(lp.rows.size) or dense(lp, **kw))
    problem = problem_of(MAJORITY6)
    hints = Hints()
    interval_orbit_certificate(problem, hints)
    assert len(solved) == 1
    exact = exact_orbit_certificate(problem, hints)
    assert exact.status == "proved-optimal"
    assert len(solved) == 1  # the same LP: not solved again
    exact_orbit_certificate(problem, Hints())
    assert len(solved) == 2  # the control


def test_the_all_input_certificates_share_rrs_float_lp():
    """Without symmetry: the interval certificate and the exact ones at the coarse and
    the fine brackets all take RR's worst-case LP from one solve (it was solved up to three
    times); fresh hints solve it again (the control)."""
    calls: list = []
    problem = problem_of(DISTINCT6, solve_with=spy(calls))
    hints = Hints()
    PROOF.interval(problem, hints)
    PROOF.exact(problem, hints, fine=False)
    PROOF.exact(problem, hints)
    assert calls.count("rr-worst") == 1
    PROOF.exact(problem, Hints())
    assert calls.count("rr-worst") == 2


def test_settling_after_the_proof_route_solves_no_lp_again():
    """`--method proof` undecided at a tiny tolerance, then the LP route settled by the same
    makers: RR's float LP of the proof route is in the hints the planner handed on."""
    calls: list = []
    problem = problem_of(DISTINCT6, solve_with=spy(calls))
    hints = hints_for(problem)
    first = PROOF.run(problem, hints)
    solved = calls.count("rr-worst")
    settled = settle(problem, first.hints, "floats differ")
    assert settled.verdict is Verdict.OPTIMAL
    assert calls.count("rr-worst") == solved  # none again


# -- the one loop, the order, --method -------------------------------------------------------
def test_the_loop_hands_each_route_the_hints_of_the_one_before(monkeypatch):
    seen = []
    real = LP.run

    def recorded(problem, hints):
        seen.append(hints)
        return real(problem, hints)

    monkeypatch.setattr(LP, "run", recorded)
    spec = loads(MAJORITY6)
    chosen = plan(spec, spec.agents[0], Accuracy.WORST, VerifyOptions(grid=3))
    order = [chosen.first[0], *chosen.later]
    assert [r.method for r in order] == ["lp", "proof", "orbit"]  # LP first
    result = verify_agent(chosen)
    assert result.method == "lp" and len(seen) == 1
    assert tuple(m.method for m in seen[0].makers) == ("proof", "orbit")  # what settles


def test_method_is_read_in_one_place_and_refuses_what_it_does_not_know():
    spec = loads(MAJORITY6)
    makers = certificate_routes(spec)
    assert wanted(makers, Method.AUTO) == list(makers)
    assert [m.method for m in wanted(makers, Method.ORBIT)] == [Method.ORBIT]
    assert wanted(makers, Method.ORBIT)[0].route is ORBIT  # the lazy reference's route
    assert wanted(makers, Method.LP) == list(makers)  # certify: the makers, auto's order
    with pytest.raises(ValueError, match="no route is the method"):
        wanted(makers, Method.RAYS)


def test_certify_says_that_the_lp_method_makes_no_certificate(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(MAJORITY6, encoding="utf-8")
    run = CliRunner().invoke(main, ["certify", str(path), "-o", str(tmp_path), "--method",
                                    "lp"])
    assert run.exit_code == 0, run.output
    assert "--method lp makes no certificate" in run.stderr
    auto = CliRunner().invoke(main, ["certify", str(path), "-o", str(tmp_path / "a")])
    assert auto.exit_code == 0 and "makes no certificate" not in auto.stderr


def test_a_route_that_does_not_decide_hands_on_and_the_attempts_are_recorded(monkeypatch):
    """The proof route made undecided (a fault injected in its result): the loop goes on to
    the next route that fits, the reason names the route passed over, and `attempts`
    (in the JSON too) lists both with their codes; the control, untouched, records one."""
    from dataclasses import replace

    from dpverify.reasons import ReasonCode
    from dpverify.verifiers.dispatch import read_result
    from dpverify.verifiers.multiparty.planner import verify_problem

    spec = loads(MAJORITY6)
    alone = verify_agent(plan(spec, spec.agents[0], Accuracy.WORST, VerifyOptions()))
    assert alone.method == "proof" and alone.attempts == ()  # the control
    real = PROOF.run

    def undecided(problem, hints):
        out = real(problem, hints)
        return replace(out, result=replace(out.result, verdict=Verdict.ERROR,
                                           reason="simulated", code=ReasonCode.BUG))

    monkeypatch.setattr(PROOF, "run", undecided)
    result = verify_agent(plan(spec, spec.agents[0], Accuracy.WORST, VerifyOptions()))
    assert result.verdict is Verdict.OPTIMAL and result.method == "orbit"
    assert [(a.method, a.verdict, a.code) for a in result.attempts] == [
        ("proof", Verdict.ERROR, ReasonCode.BUG), ("orbit", Verdict.OPTIMAL, result.code)]
    assert "method proof did not decide (simulated)" in result.reason
    data = verify_problem(spec, VerifyOptions()).to_json()
    assert [a["method"] for a in data["results"][0]["attempts"]] == ["proof", "orbit"]
    assert read_result(data).to_json() == data
