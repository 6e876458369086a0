"""Protocol files (kind = "protocol"): every kind of bad input gets one line naming the
file, the key, the value and what is allowed, and exit status 2; good files load."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.errors import SpecError
from dpverify.spec import ProtocolSpec, loads

HEAD = '[problem]\nkind = "protocol"\nparties = 2\nlambda = "3"\n'
OBS = '[observer]\nfunction = "xor"\n'
R1 = '[[round]]\nparty = 1\nmessages = 2\nkernel = [["3/4", "1/4"], ["1/4", "3/4"]]\n'


def keyed(entries: str, party: int = 2) -> str:
    return f"[[round]]\nparty = {party}\nmessages = 2\n[round.kernel]\n{entries}"


ROW16 = "[" + ", ".join(["0.0625"] * 16) + "]"

# (id, text, key, regex of the message after the key)
BAD = [
    ("row-sum", HEAD + '[[round]]\nparty = 1\nmessages = 2\n'
     'kernel = [["3/4", "1/3"], ["1/4", "3/4"]]\n' + OBS,
     "round[0].kernel[0]", r"must sum to 1, not 13/12"),
    ("row-sum-float", HEAD + '[[round]]\nparty = 1\nmessages = 2\n'
     'kernel = [[0.7, 0.2], [0.25, 0.75]]\n' + OBS,
     "round[0].kernel[0]", r"must sum to 1 \(within 1e-09\), not 0.8999"),
    ("missing-prefix", HEAD + R1 + keyed('"0" = [["1/2", "1/2"], ["1/2", "1/2"]]\n') + OBS,
     "round[1].kernel", r'no kernel for the prefix "1" .*add it, or a "\*" default'),
    ("party-range", HEAD + '[[round]]\nparty = 3\nmessages = 2\n'
     'kernel = [["1", "0"], ["0", "1"]]\n' + OBS, "round[0].party", r"must be an integer <= 2"),
    ("party-zero", HEAD + '[[round]]\nparty = 0\nmessages = 2\n'
     'kernel = [["1", "0"], ["0", "1"]]\n' + OBS, "round[0].party", r"must be an integer >= 1"),
    ("blow-up", HEAD + "".join(
        f'[[round]]\nparty = 1\nmessages = 16\nkernel = [{ROW16}, {ROW16}]\n'
        for _ in range(5)) + OBS, "round[4].messages", r"too many transcripts: rounds 0..4 "
     r"already give 1,048,576"),
    ("huge-messages", HEAD + '[[round]]\nparty = 1\nmessages = 1000000000\nkernel = []\n' + OBS,
     "round[0].messages", r"must be an integer <= 65536"),
    ("negative", HEAD + '[[round]]\nparty = 1\nmessages = 2\n'
     'kernel = [["3/2", "-1/2"], ["1/4", "3/4"]]\n' + OBS, "round[0].kernel[0][1]",
     r"probabilities must be >= 0"),
    ("rows", HEAD + '[[round]]\nparty = 1\nmessages = 2\nkernel = [["1", "0"]]\n' + OBS,
     "round[0].kernel", r"a kernel has 2 rows \(one per input symbol of the speaker\)"),
    ("entries", HEAD + '[[round]]\nparty = 1\nmessages = 3\n'
     'kernel = [["1", "0"], ["0", "1"]]\n' + OBS, "round[0].kernel[0]",
     r"a kernel row has one entry per message \(3\)"),
    ("bad-prefix-key", HEAD + R1 + keyed('"0,1" = [["1", "0"], ["0", "1"]]\n') + OBS,
     'round[1].kernel."0,1"', r"not a prefix of round 1: a key is \"\*\" or the 1 earlier "
     r"message joined"),
    ("prefix-out-of-range", HEAD + R1 + keyed('"2" = [["1", "0"], ["0", "1"]]\n') + OBS,
     'round[1].kernel."2"', r"message 2 of round 0 does not exist: round 0 has messages 0..1"),
    ("first-round-key", HEAD + keyed('"0" = [["1", "0"], ["0", "1"]]\n', party=1) + OBS,
     'round[0].kernel."0"', r"not a prefix of round 0"),
    ("no-rounds", HEAD + OBS, "round", r"is required: one \[\[round\]\] table per round"),
    ("round-not-array", HEAD + "[round]\nparty = 1\n" + OBS, "round",
     r"must be a non-empty array of tables"),
    ("unknown-round-key", HEAD + R1.replace("messages", "mesages") + OBS,
     "round[0].mesages", r"unknown key; allowed here: party, messages, kernel"),
    ("unknown-top", HEAD + R1 + OBS + "[rounds]\na = 1\n", "rounds",
     r"unknown key; allowed here: problem, round, observer, party, expect"),
    ("kernel-type", HEAD + '[[round]]\nparty = 1\nmessages = 2\nkernel = "rr"\n' + OBS,
     "round[0].kernel", r"must be a matrix \(2 rows of 2 entries"),
    ("entry-bool", HEAD + '[[round]]\nparty = 1\nmessages = 2\n'
     'kernel = [[true, false], ["0", "1"]]\n' + OBS, "round[0].kernel[0][0]",
     r"must be a probability"),
    ("no-claim", '[problem]\nkind = "protocol"\nparties = 2\n' + R1 + OBS, "problem.epsilon",
     r"is required"),
    ("expect-verdict", HEAD + R1 + OBS + '[expect.observer]\naverage = 0.5\n'
     'verdict = "contradiction"\n', "expect.observer.verdict",
     r"allowed: 'optimal', 'gap', 'suboptimal', 'not-private'"),
]


@pytest.mark.parametrize("text, key, allowed", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_protocol_files(tmp_path, text, key, allowed):
    with pytest.raises(SpecError) as info:
        loads(text, source="p.toml")
    assert info.value.key == key
    assert re.search(allowed, info.value.allowed), info.value.allowed
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    out = CliRunner().invoke(main, ["audit", str(path)])
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dpverify: {path}: `{key}`"), lines
    assert "Traceback" not in out.output


def test_a_good_file_loads_and_keeps_its_keys():
    text = (HEAD + R1 + keyed('"0" = [["1/2", "1/2"], ["1/3", "2/3"]]\n'
                              '" 1 " = [["1", "0"], ["1", "0"]]\n') + OBS)
    spec = loads(text, source="p.toml")
    assert isinstance(spec, ProtocolSpec) and spec.exact and spec.num_transcripts == 4
    second = spec.rounds[1]
    assert second.kernel((0,))[1] == (Fraction(1, 3), Fraction(2, 3))
    assert second.kernel((1,))[0] == (Fraction(1), Fraction(0))


def test_an_unreachable_prefix_needs_no_kernel():
    """After message 1 of party 1 (never sent: its column is 0), no kernel is needed."""
    text = (HEAD + '[[round]]\nparty = 1\nmessages = 2\nkernel = [["1", "0"], ["1", "0"]]\n'
            + keyed('"0" = [["3/4", "1/4"], ["1/4", "3/4"]]\n') + OBS)
    assert loads(text, source="p.toml").num_transcripts == 4


def test_float_kernels_are_audited_in_floats():
    text = (HEAD + '[[round]]\nparty = 1\nmessages = 2\nkernel = [[0.75, 0.25], [0.25, 0.75]]\n'
            + OBS)
    assert loads(text, source="p.toml").exact is False


def test_a_multiparty_file_given_to_audit_says_which_command(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[problem]\nparties = 2\nepsilon = 1.0\n' + OBS, encoding="utf-8")
    out = CliRunner().invoke(main, ["audit", str(path)])
    assert out.exit_code == 2
    assert "a multiparty problem, not a protocol: `dpverify verify` checks it" in out.stderr
