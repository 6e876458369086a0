"""Inputs with more than two symbols (docs/theory.md, section 6): problem files with
`alphabet`, the ray-product bound against independent LPs and closed forms, witnesses
valued again from their files by hand, refused witnesses and mutated certificates
(negative controls), verdicts, exit statuses, `check`, `audit` and `survey`."""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog

from dpverify.checker import check_certificate
from dpverify.cli import main
from dpverify.errors import SpecError
from dpverify.runner import Store
from dpverify.runner.check import run_check
from dpverify.spec import load, loads
from dpverify.spec.model import Accuracy
from dpverify.spec.tables import tabulate
from dpverify.status import verdict_status
from dpverify.theory.units import units_of
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.multiparty.planner import verify_by_lp
from dpverify.verifiers.multisymbol.bound import float_bound, label_gains
from dpverify.verifiers.multisymbol.verifier import symbol_outcome, verify_symbol_agent
from dpverify.verifiers.multisymbol.witness import witness_value
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import Verdict, worst_verdict

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "problems" / "multisymbol"
GAP = SHIPPED / "max-3x2-gap.toml"  # lambda = 3: the witness reaches 47/72, RR 139/225
FAST = VerifyOptions(restarts=2)


def problem(body: str, alphabet: str = "3", parties: int = 2, level: str = "epsilon = 1",
            name: str = "p") -> str:
    return (f'[problem]\nname = "{name}"\nparties = {parties}\nalphabet = {alphabet}\n'
            f"{level}\n{body}")


# -- problem files ---------------------------------------------------------------------------
def test_named_functions_of_symbols_by_hand() -> None:
    # alphabets (2, 3): inputs 00, 01, 02, 10, 11, 12 (x1 most significant)
    expected = {"sum": [0, 1, 2, 1, 2, 3], "max": [0, 1, 2, 1, 1, 2], "min": [0, 0, 0, 0, 1, 1],
                "xor": [0, 1, 0, 1, 0, 1], "mod:3": [0, 1, 2, 1, 2, 0],
                "majority": [0, 0, 1, 0, 1, 1], "threshold:3": [0, 0, 0, 0, 0, 1],
                "bit:2": [0, 1, 2, 0, 1, 2], '{ expr = "10 * x1 + x2" }': [0, 1, 2, 10, 11, 12],
                '{ table = { "00" = 5, "01" = 4, "02" = 3, "10" = 2, "11" = 1, "12" = 0 } }':
                    [5, 4, 3, 2, 1, 0]}
    for fn, values in expected.items():
        function = fn if fn.startswith("{") else f'"{fn}"'
        spec = loads(problem(f"[observer]\nfunction = {function}\n", alphabet="[2, 3]"))
        assert spec.alphabets == (2, 3) and spec.num_inputs == 6
        assert [int(v) for v in tabulate(spec, spec.agents[0]).values] == values, fn


@pytest.mark.parametrize("alphabet, function, message", [
    ("1", '"max"', r"`problem.alphabet` = 1: must be an integer 2..16"),
    ('"3"', '"max"', r"`problem.alphabet` = '3': must be an integer"),
    ("[3]", '"max"', r"`problem.alphabet` = \[3\]: a list needs exactly 2 entries"),
    ("[3, 17]", '"max"', r"`problem.alphabet\[1\]` = 17"),
    ("3", '"and"', r"`observer.function` = 'and': `and` is defined on bits; with alphabet > 2 "
                   r"write `min`"),
    ("3", '"threshold:5"', r"threshold:N needs 0 <= N <= 4"),
    ("3", '"mod:1"', r"mod:N needs 2 <= N"),
    ("3", '"bit:3"', r"bit:N needs 1 <= N <= 2"),
    ("3", "{ counts = [0, 1, 2] }", r"counts .* are for bits"),
    ("3", "{ table = [0, 1] }", r"has 2 values; a table needs prod m_i = 9 values"),
    ("3", '{ table = { "00" = 1 } }', r"every input must be listed: '01' is missing"),
    ("3", '{ expr = "x1 / (x2 - 1)" }', r"fails at x = 01: division by zero"),
])
def test_bad_input_gets_one_line(alphabet: str, function: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as raised:
        loads(problem(f"[observer]\nfunction = {function}\n", alphabet=alphabet),
              source="bad.toml")
    assert "\n" not in str(raised.value) and str(raised.value).startswith("bad.toml: ")


def test_alphabet_two_is_the_binary_problem_bit_for_bit() -> None:
    body = ('[observer]\nfunction = "majority"\n[[party]]\nindex = 2\nfunction = "xor"\n'
            'gain = "-abs"\n')
    plain = loads(problem(body, parties=3).replace("alphabet = 3\n", ""), source="a.toml")
    written = loads(problem(body, alphabet="2", parties=3), source="a.toml")
    assert written.binary and written.alphabets == (2, 2, 2)
    one, two = verify_spec(plain, VerifyOptions()), verify_spec(written, VerifyOptions())

    def without_seconds(obj):
        return {**obj, "results": [{k: v for k, v in r.items() if k != "seconds"}
                                   for r in obj["results"]]}

    assert without_seconds(one.to_json()) == without_seconds(two.to_json())
    assert not any({"best_value", "witness"} & set(r) for r in one.to_json()["results"])
    assert "alphabets" not in one.to_json()


@pytest.mark.parametrize("seed", [0, 1])
def test_rays_of_two_symbols_give_the_binary_lp(seed: int) -> None:
    """m = 2: the rays are the two corners, so the ray-product LP is today's LP."""
    rng = np.random.default_rng(seed)
    table = [int(v) for v in rng.integers(0, 3, 8)]
    spec = loads(problem(f"[observer]\nfunction = {{ table = {table} }}\n[[party]]\n"
                         f"index = 2\nfunction = \"majority\"\n", alphabet="2", parties=3,
                         level="epsilon = [0.5, 1, 2]"))
    for agent in spec.agents:
        units = units_of(tabulate(spec, agent).gain_exact)
        for accuracy in Accuracy:
            worst = accuracy is Accuracy.WORST
            bound = float_bound(spec, label_gains(spec, agent, units.unit), worst, FAST)
            binary = verify_by_lp(spec, agent, accuracy, FAST)
            assert units.user(Fraction(bound.value)) == pytest.approx(
                binary.relaxed_optimum, abs=1e-12)


# -- the bound against independent computations ---------------------------------------------
def single_channel_lp(values: list[int], lam: float, worst: bool) -> float:
    """The best lambda-DP channel for one party (indicator gain), written out by hand:
    variables C[a, y] (decisions as outputs), rows sum to 1, C[a, y] <= lam C[b, y]."""
    m, ys = len(values), sorted(set(values))
    L = len(ys)
    nv = m * L + (1 if worst else 0)
    gain = np.array([[1.0 if v == y else 0.0 for y in ys] for v in values])
    A_eq = np.zeros((m, nv))
    for a in range(m):
        A_eq[a, a * L:(a + 1) * L] = 1.0
    A_ub, b_ub = [], []
    for a, b, y in itertools.product(range(m), range(m), range(L)):
        if a != b:
            row = np.zeros(nv)
            row[a * L + y], row[b * L + y] = 1.0, -lam
            A_ub.append(row)
            b_ub.append(0.0)
    c = np.zeros(nv)
    if worst:
        c[-1] = -1.0
        for a in range(m):
            row = np.zeros(nv)
            row[a * L:(a + 1) * L] = -gain[a]
            row[-1] = 1.0
            A_ub.append(row)
            b_ub.append(0.0)
    else:
        c[:m * L] = -gain.ravel() / m
    bounds = [(0, None)] * (m * L) + ([(None, None)] if worst else [])
    res = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(m),
                  bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("values, eps", [([1, 2, 2], 1.5), ([0, 1, 2], 0.7), ([0, 0, 1, 1], 2),
                                         ([0, 1, 0, 2], 0.3)])
def test_one_party_bound_is_the_channel_lp_and_is_reached(values: list[int], eps: float) -> None:
    spec = loads(problem(f"[observer]\nfunction = {{ table = {values} }}\n",
                         alphabet=str(len(values)), parties=1, level=f"epsilon = {eps}"))
    for accuracy in Accuracy:
        out = symbol_outcome(spec, spec.agents[0], accuracy, FAST)
        assert out.bound is not None and out.best is not None
        exact = single_channel_lp(values, math.exp(eps), accuracy is Accuracy.WORST)
        assert float(out.bound.bound) == pytest.approx(exact, abs=1e-9)
        assert out.verdict in (Verdict.OPTIMAL, Verdict.GAP)  # one party: never open
        assert float(out.best) == pytest.approx(exact, abs=1e-9)


def test_one_party_closed_forms(tmp_path: Path) -> None:
    """f = (1, 2, 2), indicator: merging symbols 1 and 2 gives lam / (1 + lam); m-ary RR
    with its best rule gives (3 lam + 2) / (3 lam + 6) on average."""
    spec = load(SHIPPED / "one-party-122.toml")
    result = verify_symbol_agent(spec, spec.agents[0], Accuracy.AVERAGE,
                                 VerifyOptions(restarts=2, witness_dir=str(tmp_path)))
    lam = math.exp(1.5)
    assert result.relaxed_optimum == pytest.approx(lam / (1 + lam), abs=1e-12)
    assert result.rr_value == pytest.approx((3 * lam + 2) / (3 * lam + 6), abs=1e-12)
    assert result.verdict is Verdict.GAP


def test_two_party_bound_matches_a_dense_lp_written_here() -> None:
    """k = 2, m = 3: every product of rays written out, the LP solved by scipy."""
    rng = np.random.default_rng(7)
    table = [int(v) for v in rng.integers(0, 2, 9)]
    lam = math.exp(0.8)
    spec = loads(problem(f"[observer]\nfunction = {{ table = {table} }}\n",
                         level="epsilon = 0.8"))
    rays = [np.array(p, dtype=float) for p in itertools.product([1.0, lam], repeat=3)
            if len(set(p)) == 2]
    points = np.array([np.kron(r, s) / (r.sum() * s.sum()) for r in rays for s in rays]).T
    gain = np.array([[1.0 if v == y else 0.0 for y in (0, 1)] for v in table])
    S = points.shape[1]
    c = -np.concatenate([points.T @ gain[:, y] for y in (0, 1)]) / 9
    res = linprog(c, A_eq=np.hstack([points, points]), b_eq=np.ones(9), bounds=(0, None),
                  method="highs")
    assert res.status == 0 and S == 36
    out = symbol_outcome(spec, spec.agents[0], Accuracy.AVERAGE, FAST)
    assert out.bound is not None and float(out.bound.bound) == pytest.approx(-res.fun, abs=1e-9)


# -- witnesses -------------------------------------------------------------------------------
def test_witness_is_valued_again_by_hand(tmp_path: Path) -> None:
    spec = load(GAP)
    result = verify_symbol_agent(spec, spec.agents[0], Accuracy.AVERAGE,
                                 VerifyOptions(restarts=2, witness_dir=str(tmp_path)))
    assert result.verdict is Verdict.GAP
    doc = tomllib.loads(Path(result.witness).read_text())
    channels = [[[Fraction(v) for v in row] for row in rnd["kernel"]] for rnd in doc["round"]]
    for C in channels:  # exactly lambda-DP, rows distributions
        assert all(sum(row) == 1 for row in C)
        assert all(max(col) <= 3 * min(col) for col in zip(*C, strict=True))
    total = Fraction(0)  # the argmax rule on every transcript, exactly
    outputs = [range(len(C[0])) for C in channels]
    for o in itertools.product(*outputs):
        scores = [Fraction(0)] * 3
        for x1, x2 in itertools.product(range(3), repeat=2):
            scores[max(x1, x2)] += channels[0][x1][o[0]] * channels[1][x2][o[1]]
        total += max(scores)
    assert total / 9 == Fraction(47, 72)
    assert result.best_value == float(Fraction(47, 72))
    assert result.rr_value == pytest.approx(139 / 225, abs=1e-15)


WITNESS = """[problem]
kind = "protocol"
parties = 2
alphabet = 3
lambda = 3
accuracy = "average"
[[round]]
party = 1
messages = 2
kernel = {kernel}
[[round]]
party = 2
messages = 2
kernel = [["3/4", "1/4"], ["3/4", "1/4"], ["1/4", "3/4"]]
[observer]
function = "{function}"
"""


@pytest.mark.parametrize("kernel, function, refused", [
    ('[["3/4", "1/4"], ["3/4", "1/4"], ["1/4", "3/4"]]', "max", ""),
    ('[["9/10", "1/10"], ["3/4", "1/4"], ["1/10", "9/10"]]', "max", "not DP"),
    ('[["1", "0"], ["1", "0"], ["0", "1"]]', "max", "not DP"),
    ('[["3/4", "1/4"], ["3/4", "1/4"], ["1/4", "3/4"]]', "min", "another function"),
])
def test_a_witness_is_refused_unless_it_is_dp_and_for_this_problem(
        tmp_path: Path, kernel: str, function: str, refused: str) -> None:
    spec = load(GAP)
    path = tmp_path / "w.toml"
    path.write_text(WITNESS.format(kernel=kernel, function=function))
    units = units_of(tabulate(spec, spec.agents[0]).gain_exact)
    got = witness_value(path, spec, spec.agents[0], Accuracy.AVERAGE, (Fraction(3),) * 2,
                        units, FAST)
    if refused:
        assert got.value is None and refused in got.reason
    else:
        assert got.value == Fraction(47, 72)


# -- certificates ----------------------------------------------------------------------------
def test_mutated_mary_certificates_are_rejected() -> None:
    spec = load(GAP)
    out = symbol_outcome(spec, spec.agents[0], Accuracy.AVERAGE, FAST)
    assert out.certificate is not None and out.checked
    cert = out.certificate.to_json(spec.name)
    assert cert["format"] == "dpverify-mary-certificate/1"
    good = check_certificate(spec, cert)
    assert good.ok and good.value == Fraction(47, 72) and cert["status"] == "proved-optimal"

    def mutated(edit) -> str:
        bad = json.loads(json.dumps(cert))
        edit(bad)
        result = check_certificate(spec, bad)
        assert not result.ok
        return result.message

    def lower_mu(c):
        c["upper"]["mu"][4] = str(Fraction(c["upper"]["mu"][4]) - Fraction(1, 100))
        c["upper"]["bound"] = str(sum(Fraction(v) for v in c["upper"]["mu"]))

    def sharper_channel(c):  # rows still distributions, but a ratio of 4 > 3
        c["lower"]["channels"][0][0] = ["4/5", "1/5"]

    assert "ray inequality fails" in mutated(lower_mu)
    assert "not DP" in mutated(sharper_channel)
    assert "lower.value" in mutated(lambda c: c["lower"].update(value="3/4"))
    assert "bound" in mutated(lambda c: c["upper"].update(bound="1/2"))
    binary = dict(cert, format="dpverify-certificate/1")
    assert not check_certificate(spec, binary).ok


# -- verdicts --------------------------------------------------------------------------------
def test_verdicts_do_not_depend_on_the_scale_of_the_gains(tmp_path: Path) -> None:
    body = '[observer]\nfunction = "max"\ngain = {{ matrix = [{rows}] }}\n'
    for scale in ("1", "1/1000000000"):
        rows = ", ".join("[" + ", ".join(f'"{scale}"' if i == j else '"0"' for j in range(3))
                         + "]" for i in range(3))
        spec = loads(problem(body.format(rows=rows), level='lambda = "3"'))
        result = verify_symbol_agent(spec, spec.agents[0], Accuracy.AVERAGE,
                                     VerifyOptions(restarts=2, witness_dir=str(tmp_path)))
        assert result.verdict is Verdict.GAP
        assert result.relaxed_optimum == pytest.approx(float(Fraction(47, 72) *
                                                             Fraction(scale)), rel=1e-12)


def test_open_is_undecided_exit_status_three() -> None:
    assert verdict_status(["open"]) == 3 and verdict_status(["gap", "open"]) == 3
    assert worst_verdict([Verdict.GAP, Verdict.OPEN]) is Verdict.OPEN
    assert worst_verdict([Verdict.OPEN, Verdict.ERROR]) is Verdict.ERROR


def test_check_accepts_expected_open_and_gap_verdicts(tmp_path: Path, inline_executor) -> None:
    """The shipped problems: optimal, gap (with its witness, audited), open."""
    with Store(tmp_path / "s.sqlite") as store:
        report = run_check([SHIPPED], VerifyOptions(witness_dir=str(tmp_path)), store=store,
                           executor=inline_executor)
    assert report.exit_status() == 0 and not report.mismatches
    verdicts = {item.problem: item.verdict for item in report.batch.items}
    assert verdicts == {"xor-3x2": "optimal", "max-3x2-gap": "gap", "max-3x2-open": "open",
                        "one-party-122": "gap", "max-3x2-gap-witness": "optimal"}
    open_problem = tmp_path / "open.toml"  # `open` where optimal is expected: a mismatch
    text = (SHIPPED / "max-3x2-open.toml").read_text().replace('verdict = "open"\n', "")
    open_problem.write_text(text)
    with Store(tmp_path / "t.sqlite") as store:
        report = run_check([open_problem], VerifyOptions(), store=store,
                           executor=inline_executor)
    assert report.exit_status() == 1 and "open" in report.mismatches[0].note


def test_survey_classes_count_like_every_function(tmp_path: Path) -> None:
    from dpverify.research.survey import SurveyPlan, run_survey

    rows = []
    for symmetry in (True, False):
        plan = SurveyPlan(3, 1, (Fraction(1),), accuracies=("average",), symmetry=symmetry)
        report = run_survey(plan, FAST, save_dir=tmp_path / str(symmetry))
        rows.append([{k: v for k, v in row.items() if k != "classes"}
                     for row in report.rows()])
    assert rows[0] == rows[1] and rows[0][0]["functions"] == 8
    assert rows[0][0]["gap"] == 6 and rows[0][0]["optimal"] == 2  # constants are optimal
    saved = sorted((tmp_path / "True").glob("*.toml"))
    assert saved and all(load(p).expect[0].verdict == "gap" for p in saved)


def test_survey_command_json(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["survey", "--alphabet", "3", "--parties", "1",
                                     "--epsilon", "0.5,1", "--accuracy", "worst", "-j", "1",
                                     "--restarts", "1", "--save", str(tmp_path), "--json"])
    assert done.exit_code == 1, done.output  # gaps, nothing open
    report = json.loads(done.stdout)
    assert [row["epsilon"] for row in report["rows"]] == [0.5, 1.0]
    assert all(row["functions"] == 8 and row["gap"] == 6 for row in report["rows"])
    assert len(report["saved"]) == 2


def test_audit_of_a_protocol_on_symbols() -> None:
    done = CliRunner().invoke(main, ["audit", str(SHIPPED / "max-3x2-gap-witness.toml"),
                                     "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)[0]["results"][0]
    assert result["protocol_value_exact"] == "47/72" and result["verdict"] == "optimal"
    assert result["rr_value"] == pytest.approx(139 / 225, abs=1e-15)


def test_no_xor_closed_form_for_symbols() -> None:
    """Corollary 3.1 is for bits: a sweep shows no closed form for `xor` on symbols."""
    from dpverify.sweeps.reference import closed_forms

    assert closed_forms(load(SHIPPED / "xor-3x2.toml")) == {}
    assert closed_forms(load(ROOT / "problems" / "xor-2.toml"))


@pytest.mark.fresh_pool  # the control's limit bites on workers still starting
def test_survey_runs_through_the_batch_runner(tmp_path: Path, monkeypatch) -> None:
    """Each case is a problem run by runner/batch.py: a time limit per case gives `error`
    rows with the batch's reason instead of a hang, and the m-ary witnesses the cases
    write do not land in the working directory."""
    from dpverify.research.survey import SurveyPlan, run_survey

    monkeypatch.chdir(tmp_path)
    plan = SurveyPlan(3, 1, (Fraction(1),), accuracies=("average",))
    done = run_survey(plan, FAST, jobs=1)
    assert {r.verdict for r in done.results} == {"optimal", "gap"}
    assert not (tmp_path / ".dpverify").exists()
    stopped = run_survey(plan, FAST, jobs=1, timeout=1e-6)  # control: the limit bites
    assert {r.verdict for r in stopped.results} == {"error"}
    assert all("timeout" in r.reason for r in stopped.results)
