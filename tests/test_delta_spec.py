"""The `delta` key of problem and protocol files (approximate privacy, spec.md): parsed
exactly, per party or one for all, refused with one line outside [0, 1), written back by
the one TOML writer, and absent means 0 (every current result unchanged)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpverify.errors import SpecError
from dpverify.spec import loads
from dpverify.spec.documents import problem_document, toml_text

BASE = """[problem]
name = "xor-2"
parties = 2
epsilon = 1
{delta}

[observer]
function = "xor"
"""


def test_absent_delta_is_zero_for_every_party():
    spec = loads(BASE.format(delta=""))
    assert spec.deltas == (0, 0) and not spec.approximate


@pytest.mark.parametrize(("text", "expected"), [
    ('delta = "1/10"', (Fraction(1, 10),) * 2),
    ("delta = 0.125", (Fraction(1, 8),) * 2),
    ('delta = [0, "1/3"]', (Fraction(0), Fraction(1, 3))),
])
def test_delta_is_read_exactly(text, expected):
    spec = loads(BASE.format(delta=text))
    assert spec.deltas == expected and spec.approximate


@pytest.mark.parametrize(("text", "key"), [
    ("delta = 1", "problem.delta"),
    ("delta = -0.1", "problem.delta"),
    ('delta = [0.1, 1.5]', "problem.delta[1]"),
    ("delta = [0.1]", "problem.delta"),
    ('delta = "x"', "problem.delta"),
])
def test_bad_delta_is_one_line(text, key):
    with pytest.raises(SpecError) as info:
        loads(BASE.format(delta=text), source="p.toml")
    assert info.value.key == key and "\n" not in str(info.value)
    assert str(info.value).startswith("p.toml: ")


def test_delta_round_trips_through_the_writer():
    spec = loads(BASE.format(delta='delta = [0, "1/3"]'))
    again = loads(toml_text(problem_document(spec)))
    assert again.deltas == spec.deltas
    plain = loads(toml_text(problem_document(loads(BASE.format(delta="")))))
    assert "delta" not in toml_text(problem_document(plain))


def test_protocol_files_carry_delta():
    text = """[problem]
kind = "protocol"
parties = 1
lambda = "3"
delta = "1/10"

[[round]]
party = 1
messages = 2
kernel = [["3/4", "1/4"], ["1/4", "3/4"]]

[observer]
function = "bit:1"
"""
    spec = loads(text)
    assert spec.deltas == (Fraction(1, 10),) and spec.claimed().deltas == spec.deltas


def test_the_builders_take_delta():
    import dpverify

    built = dpverify.Problem.multiparty(parties=2, epsilon=1, observer="xor", delta="1/10")
    assert built.spec.deltas == (Fraction(1, 10),) * 2
    assert loads(built.text).deltas == built.spec.deltas  # the text says it too
    count = dpverify.Problem.count(3, epsilon=1, delta="1/20")
    assert count.spec.delta == Fraction(1, 20)
    assert dpverify.Problem.multiparty(parties=2, epsilon=1, observer="xor").spec.deltas == (0, 0)
    assert callable(dpverify.privacy_profile) and "privacy_profile" in dpverify.__all__
