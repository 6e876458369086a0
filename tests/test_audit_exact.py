"""Issue 17, items 1, 2, 3 and 12: protocol audits that never mis-state privacy or
optimality at any size, and keyed kernels looked up in linear time.

* Exact kernels are judged exactly at every size within the file limits (one walk of the
  prefix tree: theory/protocols/tree.py), or the audit says it cannot (exit status 3).
* Float kernels are the binary rationals they denote: no underflow to `inf`.
* Ties that floats cannot tell (`--tol 0`) are decided by the exact value against a
  certificate checked independently.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import time
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.reasons import ReasonCode
from dpverify.spec import loads
from dpverify.spec.tables import tabulate
from dpverify.theory.protocols.transcripts import achieved_lambda, transcripts
from dpverify.theory.protocols.tree import transcript_classes
from dpverify.theory.units import units_of
from dpverify.verifiers.audit.protocol import audit_protocol
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.result import Verdict

OPTIONS = VerifyOptions()
EXACT_TIE = VerifyOptions(tol=0.0)


def kernel_text(kernel) -> str:
    def entry(v):
        return repr(v) if isinstance(v, float) else f'"{v}"'

    return "[" + ", ".join("[" + ", ".join(entry(v) for v in row) + "]" for row in kernel) + "]"


def round_text(party: int, kernel) -> str:
    return (f"[[round]]\nparty = {party}\nmessages = {len(kernel[0])}\n"
            f"kernel = {kernel_text(kernel)}\n\n")


def protocol_text(parties: int, levels: str, rounds: str,
                  agents: str = '[observer]\nfunction = "bit:1"\n') -> str:
    return (f'[problem]\nkind = "protocol"\nname = "p"\nparties = {parties}\n{levels}\n\n'
            f"{rounds}{agents}")


def audit_cli(tmp_path, text: str, *args: str):
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    run = CliRunner().invoke(main, ["audit", str(path), "--json", *args])
    return run.exit_code, json.loads(run.stdout)[0]


EIGHTH = [["1/8"] * 8] * 2
TEN54 = 10 ** 54
TINY = [[f"3/{TEN54}", f"{TEN54 - 3}/{TEN54}"], [f"1/{TEN54}", f"{TEN54 - 1}/{TEN54}"]]


def reproduction_1a(levels: str = 'lambda = "3"') -> str:
    """Three parties, 8 x 8^5 = 2^18 x 2 inputs x transcripts: above the old float switch."""
    first = [["7500000000001/10000000000000", "2499999999999/10000000000000"], ["1/4", "3/4"]]
    rounds = round_text(1, first) + "".join(round_text(p, EIGHTH) for p in (2, 3, 2, 3, 2))
    return protocol_text(3, levels, rounds)


def reproduction_1b(levels: str, filler) -> str:
    """Six rounds of party 1 at ratio 3 on message 0 (entries of 10^-54), then fillers."""
    rounds = round_text(1, TINY) * 6 + "".join(round_text(p, filler(8)) for p in (2, 3, 2))
    return protocol_text(3, levels, rounds + round_text(3, filler(2)))


def uniform(m: int):
    return [[f"1/{m}"] * m] * 2


def deterministic(m: int):
    return [["1"] + ["0"] * (m - 1)] * 2


# -- item 1: large exact protocols are judged exactly -----------------------------------
def test_reproduction_1a_is_not_private_exactly(tmp_path):
    exit_code, obj = audit_cli(tmp_path, reproduction_1a())
    # party 1's worst ratio, by hand: (3/4) / (2499999999999/10^13) beats the other column
    level = max(Fraction(7500000000001, 10 ** 13) / Fraction(1, 4),
                Fraction(3, 4) / Fraction(2499999999999, 10 ** 13))
    assert level == Fraction(2500000000000, 833333333333) and level > 3
    assert obj["achieved_lambdas"] == ["2500000000000/833333333333", "1", "1"]
    assert obj["private"] is False and obj["verdict"] == "not-private"
    assert {r["verdict"] for r in obj["results"]} == {"not-private"}
    assert exit_code == 1


def test_reproduction_1a_at_its_exact_level_is_private(tmp_path):
    """The control: claiming exactly the level it has, it is private."""
    _, obj = audit_cli(tmp_path, reproduction_1a('lambda = "2500000000000/833333333333"'))
    assert obj["private"] is True
    assert "not-private" not in {r["verdict"] for r in obj["results"]}
    # and the values are exact, not floats: the protocol is RR's level-3 channel in effect
    assert obj["exact"] is True and {r["method"] for r in obj["results"]} == {"exact"}


def test_reproduction_1b_underflow_is_not_skipped(tmp_path):
    """Six ratios of 3 on the all-zero path: 729 > 300 (floats lost that path: 243)."""
    exit_code, obj = audit_cli(tmp_path, reproduction_1b('lambda = "300"', uniform))
    assert obj["achieved_lambdas"] == ["729", "1", "1"]
    assert obj["verdict"] == "not-private" and exit_code == 1
    for r in obj["results"]:  # both values computed exactly, with entries of 10^-324
        assert r["method"] == "exact" and r["verdict"] == "not-private"


def test_reproduction_1c_deterministic_fillers_are_private(tmp_path):
    """The same with lambda 729 and deterministic fillers: exactly 729, private (floats
    said inf). The observer learns almost nothing: the value is 1/2 plus ~10^-54."""
    _, obj = audit_cli(tmp_path, reproduction_1b('lambda = "729"', deterministic))
    assert obj["achieved_lambdas"] == ["729", "1", "1"] and obj["private"] is True
    for r in obj["results"]:
        assert r["verdict"] == "suboptimal" and r["method"] == "exact"
        value = Fraction(r["protocol_value_exact"])
        assert 0 < value - Fraction(1, 2) < Fraction(1, 10 ** 50)


def test_a_protocol_too_large_to_value_exactly_is_undecided(tmp_path, monkeypatch):
    """Over the memory budget an exact protocol's value is undecided (exit 3), never a
    float; privacy is still exact, and a party that misses its level is still found."""
    import dpverify.verifiers.audit.protocol as audit

    monkeypatch.setattr(audit, "MAX_EXACT_BYTES", 100)
    exit_code, obj = audit_cli(tmp_path, reproduction_1b('lambda = "729"', uniform))
    assert obj["private"] is True and obj["exact"] is False
    assert {r["verdict"] for r in obj["results"]} == {"error"} and exit_code == 3
    assert all(r["reason_code"] == "size-limit"
               and r["reason"].startswith("undecided: the protocol's value needs")
               for r in obj["results"])
    exit_code, obj = audit_cli(tmp_path, reproduction_1b('lambda = "300"', uniform))
    assert obj["verdict"] == "not-private" and exit_code == 1


def test_a_float_protocol_over_the_budget_is_valued_in_floats(tmp_path, monkeypatch):
    import dpverify.verifiers.audit.protocol as audit

    monkeypatch.setattr(audit, "MAX_EXACT_BYTES", 100)
    text = protocol_text(2, 'lambda = "3"', round_text(1, [[0.75, 0.25], [0.25, 0.75]])
                         + round_text(2, [[0.75, 0.25], [0.25, 0.75]]))
    _, obj = audit_cli(tmp_path, text)
    assert obj["exact"] is False and {r["method"] for r in obj["results"]} == {"float"}
    assert obj["achieved_lambdas"] == [3.0, 3.0] and obj["verdict"] == "optimal"


# -- the prefix tree against the full transcripts ---------------------------------------
def random_protocol(seed: int) -> str:
    """Random adaptive protocols with zeros (dead branches, unbounded ratios) and keys."""
    rng = random.Random(seed)
    k = rng.randint(1, 3)
    symbols = 3 if seed % 4 == 3 else 2  # inputs with three symbols too
    rounds, sizes = "", []
    for _ in range(rng.randint(1, 4)):
        party, M = rng.randint(1, k), rng.randint(1, 3)
        rounds += f"[[round]]\nparty = {party}\nmessages = {M}\n[round.kernel]\n"
        for prefix in itertools.product(*(range(s) for s in sizes)):
            rows = []
            for _ in range(symbols):
                weights = [rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(M)]
                weights[rng.randrange(M)] += 1
                rows.append([f"{w}/{sum(weights)}" for w in weights])
            rounds += f'"{",".join(map(str, prefix))}" = {kernel_text(rows)}\n'
        rounds += "\n"
        sizes.append(M)
    if symbols == 3:
        agents = '[observer]\nfunction = "max"\n\n[[party]]\nindex = 1\nfunction = "sum"\n'
        return protocol_text(k, 'alphabet = 3\nlambda = "4"', rounds, agents)
    agents = '[observer]\nfunction = "xor"\n\n[[party]]\nindex = 1\nfunction = "or"\n'
    return protocol_text(k, 'lambda = "4"', rounds, agents)


@pytest.mark.parametrize("seed", range(40))
def test_the_tree_agrees_with_the_full_transcripts(seed):
    spec = loads(random_protocol(seed), source=f"random-{seed}.toml")
    full = transcripts(spec)
    classes = transcript_classes(spec)
    assert classes.levels() == tuple(achieved_lambda(full, i + 1)
                                     for i in range(spec.parties))
    merged = classes.transcripts()
    P = [[Fraction(int(v), full.den) for v in row] for row in full.num.tolist()]
    Q = [[Fraction(int(v), merged.den) for v in row] for row in merged.num.tolist()]
    for c in range(merged.num.shape[1]):  # a class is the sum of its members
        members = np.flatnonzero(merged.members == c).tolist()
        assert [sum(P[x][t] for t in members) for x in range(len(P))] == [row[c] for row in Q]
    for t in np.flatnonzero(merged.members < 0).tolist():  # no input reaches the others
        assert all(row[t] == 0 for row in P)
    for agent in spec.agents:
        units = units_of(tabulate(spec.claimed(), agent).gain_exact)
        for worst in (False, True):
            a = protocol_value(full, units.unit, units.exact, agent.party, worst, OPTIONS)
            b = protocol_value(merged, units.unit, units.exact, agent.party, worst, OPTIONS)
            assert a.exact is not None and a.exact == b.exact


# -- item 2: float kernels with tiny entries -------------------------------------------------
def test_reproduction_2_tiny_float_entries(tmp_path):
    kernel = [[3e-162, 1.0], [1e-162, 1.0]]
    exit_code, obj = audit_cli(tmp_path, protocol_text(1, 'lambda = "9"',
                                                       round_text(1, kernel) * 2))
    (level,) = obj["achieved_lambdas"]
    assert level == pytest.approx(9.0, rel=1e-15)  # 3 x 3, as the binary rationals give
    assert obj["private"] is True
    assert "error" not in {r["verdict"] for r in obj["results"]}
    assert {r["verdict"] for r in obj["results"]} == {"suboptimal"}
    # control: a claim of 8 is missed
    _, obj = audit_cli(tmp_path, protocol_text(1, 'lambda = "8"', round_text(1, kernel) * 2))
    assert obj["verdict"] == "not-private"


def test_levels_of_thousands_of_digits_are_written_exactly(tmp_path):
    """Ratios of 2 x 10^23 over 14 rounds: a level beyond any float, whose exact value (the
    binary rationals' denominators are 2^1074) has more digits than Python's 4300-digit
    int <-> str limit. It is written exactly, and the audit is decided (no error)."""
    kernel = [[5e-324, 1.0], [1e-300, 1.0]]
    text = protocol_text(1, 'lambda = "3"', round_text(1, kernel) * 14)
    exit_code, obj = audit_cli(tmp_path, text)
    (level,) = obj["achieved_lambdas"]
    assert re.fullmatch(r"[0-9]+/[0-9]+", level) and len(level) > 2 * 4300
    assert obj["achieved_epsilons"][0] == pytest.approx(14 * math.log(1e-300 / 5e-324))
    assert obj["verdict"] == "not-private" and exit_code == 1
    # a float protocol's value is not written as a rational ([expect] takes the float)
    assert all("protocol_value_exact" not in r and r["method"] == "exact"
               for r in obj["results"])


# -- item 3: --tol 0 decides ties exactly --------------------------------------------------
def rr_protocol(lambdas, function: str = "majority", gain: str = "-abs") -> str:
    rounds = "".join(round_text(i + 1, [[f"{lam}/{lam + 1}", f"1/{lam + 1}"],
                                        [f"1/{lam + 1}", f"{lam}/{lam + 1}"]])
                     for i, lam in enumerate(lambdas))
    agents = f'[observer]\nfunction = "{function}"\ngain = "{gain}"\n\n' + "".join(
        f'[[party]]\nindex = {i + 1}\nfunction = "{function}"\ngain = "{gain}"\n\n'
        for i in range(len(lambdas)))
    levels = "lambda = [" + ", ".join(f'"{v}"' for v in lambdas) + "]"
    return protocol_text(len(lambdas), levels, rounds, agents)


def test_reproduction_3_rr_at_tol_zero_is_optimal(tmp_path):
    exit_code, obj = audit_cli(tmp_path, rr_protocol([2, 4]), "--tol", "0")
    assert obj["verdict"] == "optimal" and exit_code == 0
    observer = next(r for r in obj["results"]
                    if (r["agent"], r["accuracy"]) == ("observer", "average"))
    assert observer["protocol_value_exact"] == observer["relaxed_optimum_exact"] == "-7/30"
    for r in obj["results"]:
        assert r["verdict"] == "optimal" and r["gap"] == 0.0
        assert r["protocol_value_exact"] == r["relaxed_optimum_exact"]


@pytest.mark.parametrize(("lambdas", "function", "gain"), [
    ([2, 3], "and", "indicator"),
    ([3, 3, 5], "majority", "-abs"),
    ([2, 7, 3], "sum", "-abs"),
    ([5, 2], "xor", "indicator"),
])
def test_rr_files_at_tol_zero_are_optimal(lambdas, function, gain):
    spec = loads(rr_protocol(lambdas, function, gain), source="rr.toml")
    result = audit_protocol(spec, EXACT_TIE)
    assert {r.verdict for r in result.results} == {Verdict.OPTIMAL}, \
        [(r.agent, r.accuracy, r.verdict, r.reason) for r in result.results]


def test_a_protocol_a_hair_below_rr_is_suboptimal_exactly():
    """Negative control: party 1 at 2 - 10^-12 against a claim of 2. The gap (~10^-13) is
    below what floats tell; decided exactly, it is suboptimal, not optimal."""
    lam = Fraction(2) - Fraction(1, 10 ** 12)
    text = rr_protocol([2, 4]).replace('"2/3", "1/3"], ["1/3", "2/3"',
                                       f'"{lam / (1 + lam)}", "{1 / (1 + lam)}"], '
                                       f'["{1 / (1 + lam)}", "{lam / (1 + lam)}"')
    spec = loads(text, source="hair.toml")
    assert spec.rounds[0].kernels[0][1][0][0] == lam / (1 + lam)  # the edit took
    result = audit_protocol(spec, EXACT_TIE)
    observer = {(r.agent, r.accuracy): r for r in result.results}[("observer", "average")]
    assert observer.verdict is Verdict.SUBOPTIMAL
    assert abs(observer.gap) < 1e-10  # floats alone could not have told


def test_an_exact_bound_a_hair_low_is_a_contradiction(monkeypatch):
    """Negative control of the exact tie: lower the certificate's bound by 10^-30 (as a bug
    would). RR exceeds it at its own levels: `contradiction`, decided exactly."""
    import dpverify.verifiers.audit.protocol as audit

    real = audit.exact_bracket

    def tampered(*args, **kwargs):
        got = real(*args, **kwargs)
        return got if isinstance(got, str) else (got[0] - Fraction(1, 10 ** 30),
                                                 got[1] - Fraction(1, 10 ** 30))

    monkeypatch.setattr(audit, "exact_bracket", tampered)
    result = audit_protocol(loads(rr_protocol([2, 4]), source="rr.toml"), EXACT_TIE)
    assert {r.verdict for r in result.results} == {Verdict.CONTRADICTION}
    assert all("exactly" in r.reason for r in result.results)


def test_a_tie_without_an_exact_bound_is_undecided(monkeypatch):
    import dpverify.verifiers.audit.protocol as audit

    monkeypatch.setattr(audit, "exact_bracket", lambda *a, **k: "no certificate (test)")
    result = audit_protocol(loads(rr_protocol([2, 4]), source="rr.toml"), EXACT_TIE)
    for r in result.results:
        # a verdict floats decided stays; the others say they could not decide
        assert r.verdict in (Verdict.OPTIMAL, Verdict.ERROR)
        if r.verdict is Verdict.ERROR:
            assert r.code is ReasonCode.BOUND_UNDECIDED and "no certificate (test)" in r.reason


# -- item 12: keyed kernels in linear time -------------------------------------------------
def keyed_protocol(bits: int) -> str:
    """2^bits keys in the last round (16,384 keys: a 1 MB file)."""
    rng = random.Random(bits)
    rounds = "".join(round_text(1 + r % 2, [["1/2", "1/2"], ["1/2", "1/2"]])
                     for r in range(bits))
    rounds += f"[[round]]\nparty = {1 + bits % 2}\nmessages = 2\n[round.kernel]\n"
    for prefix in itertools.product((0, 1), repeat=bits):
        a = rng.randint(1, 3)
        rounds += f'"{",".join(map(str, prefix))}" = [["{a}/4", "{4 - a}/4"], ' \
                  f'["{4 - a}/4", "{a}/4"]]\n'
    return protocol_text(2, 'lambda = "3"', rounds + "\n", '[observer]\nfunction = "xor"\n')


def test_keyed_kernels_are_looked_up_once():
    """16,384 keys took 70 s (a dict rebuilt per prefix, twice at load); now seconds."""
    text = keyed_protocol(14)
    start = time.perf_counter()
    spec = loads(text, source="keyed.toml")
    result = audit_protocol(spec, OPTIONS)
    seconds = time.perf_counter() - start
    assert result.header["achieved_lambdas"] == ["3", "1"]  # the last round is party 1's
    assert {r.verdict for r in result.results} == {Verdict.SUBOPTIMAL}
    assert seconds < 20, seconds


def test_a_keyed_prefix_beyond_its_round_is_refused():
    spec = loads(keyed_protocol(2), source="k.toml")
    with pytest.raises(ValueError, match="not a prefix"):
        spec.rounds[-1].kernel_index([2])
    kernels, which = spec.rounds[-1].kernel_index([2, 2])
    assert len(which) == 4 and (which >= 0).all() and len(kernels) == 4
