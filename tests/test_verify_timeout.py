"""`verify --timeout` (issue 19): a problem still running after the limit has verdict
`error` with reason `timeout`, exit status 3, as in a batch; a problem that finishes in
time is unaffected, and no timer is left behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

import dpverify
import dpverify.runner.files as files
from dpverify.cli import main

XOR = """[problem]
name = "xor-3"
parties = 3
epsilon = 1.0

[observer]
function = "xor"
"""


def _stuck(spec, options):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Python code: the timer interrupts it
        time.sleep(0.01)
    raise AssertionError("the time limit did not stop the problem")


def test_a_problem_over_its_time_limit_is_an_error_with_reason_timeout(tmp_path, monkeypatch):
    (tmp_path / "a.toml").write_text(XOR)
    (tmp_path / "b.toml").write_text(XOR.replace("xor-3", "xor-3b"))
    real = files.verify_spec
    calls = []

    def first_stuck(spec, options):
        calls.append(spec.name)
        return _stuck(spec, options) if len(calls) == 1 else real(spec, options)

    monkeypatch.setattr(files, "verify_spec", first_stuck)
    start = time.monotonic()
    out = CliRunner().invoke(main, ["verify", str(tmp_path), "--timeout", "0.3", "--json"])
    assert time.monotonic() - start < 10
    assert out.exit_code == 3, out.output
    rows = json.loads(out.stdout)
    assert rows[0]["verdict"] == "error" and rows[0]["reason_code"] == "timeout"
    assert rows[1]["verdict"] == "optimal"  # the next problem gets its own full limit
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no timer left behind


def test_a_problem_within_its_time_limit_is_unaffected(tmp_path):
    path = tmp_path / "xor.toml"
    path.write_text(XOR)
    out = CliRunner().invoke(main, ["verify", str(path), "--timeout", "60", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)[0]["verdict"] == "optimal"


def test_the_api_verify_takes_a_timeout(monkeypatch):
    import dpverify.verifiers.dispatch as dispatch

    problem = dpverify.load(XOR)
    monkeypatch.setattr(dispatch, "VERIFIERS", {k: _stuck for k in dispatch.VERIFIERS})
    result = dpverify.verify(problem, timeout=0.2)
    assert result.verdict == "error" and result.reason.startswith("timeout")


def test_a_real_long_problem_stops_at_the_limit(tmp_path):
    """A whole command on a problem that takes seconds (12 parties, a worst case)."""
    table = [(i * 7919) % 3 for i in range(2 ** 12)]
    path = tmp_path / "slow.toml"
    path.write_text(f"""[problem]
name = "slow"
parties = 12
epsilon = {[0.5 + 0.1 * i for i in range(12)]}
accuracy = "worst"

[observer]
function = {{ table = {table} }}
""")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dpverify", "verify", str(path), "--json",
                           "--timeout", "0.5"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)[0]["reason"].endswith("timeout: no verdict within 0.5 s "
                                                         "(--timeout)")
    assert time.monotonic() - start < 30


def test_a_size_guard_bounds_time_too(tmp_path):
    """The orbit method's work, at policy.ORBIT_WORK_PER_SECOND, beyond the time left in
    the run: refused at once (exit 3), the refusal naming --timeout; the same problem with
    time to spare is not refused by it (the control), nor outside a run."""
    from dpverify import clock
    from dpverify.reasons import ReasonCode
    from dpverify.spec import loads
    from dpverify.spec.model import Accuracy
    from dpverify.verifiers.multiparty.orbit import ORBIT
    from dpverify.verifiers.multiparty.reductions import AgentProblem
    from dpverify.verifiers.options import VerifyOptions

    spec = loads('[problem]\nname = "x"\nparties = 400\nepsilon = 1\naccuracy = "average"\n'
                 '[observer]\nfunction = "sum"\n')
    problem = AgentProblem(spec, spec.agents[0], Accuracy.AVERAGE, VerifyOptions())
    assert ORBIT.fits(problem) is None  # no run, no deadline
    with clock.within(600):
        assert ORBIT.fits(problem) is None
    with clock.within(0.01):
        why = ORBIT.fits(problem)
    assert why is not None and "--timeout" in why and "s left" in why
    path = tmp_path / "x.toml"
    path.write_text('[problem]\nname = "x"\nparties = 400\nepsilon = 1\naccuracy = "average"\n'
                    '[observer]\nfunction = "sum"\n')
    got = CliRunner().invoke(main, ["verify", str(path), "--method", "orbit", "--json",
                                    "--timeout", "0.05"])
    (data,) = json.loads(got.stdout)
    assert got.exit_code == 3 and data["reason_code"] in (ReasonCode.SIZE_LIMIT,
                                                           ReasonCode.TIMEOUT)
