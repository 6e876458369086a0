"""Every input answered (issue 25, point 4): inputs that crashed (exit 4) or ran for
minutes are one short line with exit 2 (or 3 for a documented limit)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.filenames import MAX_STEM_BYTES, file_stem
from dpverify.spec import loads
from dpverify.spec.counts import count_form, count_values
from dpverify.spec.expr import compile_expression
from dpverify.spec.expr_values import MAX_TEXT_LENGTH


def _run(args):
    return CliRunner().invoke(main, args)


# --------------------------------------------------------------------------- names


def test_a_huge_name_gives_a_short_stem():
    # 4 MB: the old character-by-character trim re-encoded the whole name per character
    # (quadratic: hours at this size; this test then fails by the suite's timeout)
    name = "a b" * 1_400_000
    stem = file_stem(name)
    assert len(stem.encode("utf-8")) <= MAX_STEM_BYTES and stem.startswith("a_ba_b")
    assert stem != file_stem(name + "c")  # the hash still tells names apart
    wide = "é" * 500_000  # two bytes a character: cut to the byte budget, not to characters
    assert len(file_stem(wide).encode("utf-8")) <= MAX_STEM_BYTES


def test_certify_with_a_megabyte_name(tmp_path):
    name = "x " * 500_000
    path = tmp_path / "big.toml"
    path.write_text(f'[problem]\nname = "{name}"\nparties = 2\nlambda = "2"\n'
                    'accuracy = "average"\n\n[observer]\nfunction = "xor"\n',
                    encoding="utf-8")
    result = _run(["certify", str(path), "-o", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output[-500:]
    written = list((tmp_path / "out").iterdir())
    assert written and all(len(p.name.encode()) < 200 for p in written)


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize("parties", [23, 14_000, 100_000])
def test_a_table_for_too_many_parties_is_one_short_line(tmp_path, parties):
    path = tmp_path / "t.toml"
    path.write_text(f'[problem]\nparties = {parties}\nlambda = "2"\n\n'
                    "[observer]\nfunction = { table = [0, 1] }\n", encoding="utf-8")
    result = _run(["verify", str(path)])
    assert result.exit_code == 2, result.output[-500:]
    line = next(t for t in result.output.splitlines() if "observer.function.table" in t)
    assert len(line) < 400 and f"2^{parties}" in line and "22 parties" in line


def test_a_table_of_bit_strings_for_40_parties_is_refused_without_listing_2_40(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('[problem]\nparties = 40\nlambda = "2"\n\n'
                    '[observer]\nfunction = { table = { "01" = 1 } }\n', encoding="utf-8")
    result = _run(["verify", str(path)])
    assert result.exit_code == 2 and "at most 22 parties" in result.output


def test_a_table_within_the_limit_still_says_what_it_needs(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('[problem]\nparties = 3\nlambda = "2"\n\n'
                    "[observer]\nfunction = { table = [0, 1] }\n", encoding="utf-8")
    result = _run(["verify", str(path)])
    assert result.exit_code == 2 and "a table needs 2^3 = 8 values" in result.output


# --------------------------------------------------------------------------- sum(x)


def _long_sum_expression() -> str:
    # 506 characters; ast.unparse writes 1e15 as 1000000000000000.0: 2,101 characters
    return "sum(x)+" + "+".join(["1e15"] * 100)


def test_the_count_form_is_never_longer_than_the_text():
    text = _long_sum_expression()
    form = count_form(text)
    assert form is not None and len(form) <= len(text) <= MAX_TEXT_LENGTH
    assert form.startswith("c+1e15+")
    expression = compile_expression(form, ["c", "k"])
    assert expression.evaluate({"c": 3, "k": 5}) == 3 + 100 * 10**15


@pytest.mark.parametrize("text", [
    "1 if sum(x) > k/2 else 0",
    "sum( x ) % 3",
    "(sum(x)\n  * 2) - k",
    "(sum(x)\r\n  * 2) - k",
    "min(sum(x), k - sum(x)) + abs(sum(x) - 1)",
    "max(sum(x) - 2, 0)",
])
def test_the_count_form_evaluates_as_the_expression(text):
    form = count_form(text)
    assert form is not None
    k = 6
    original = compile_expression(text, ["x", "k"])
    rewritten = compile_expression(form, ["c", "k"])
    for c in range(k + 1):
        x = tuple([1] * c + [0] * (k - c))
        assert Fraction(rewritten.evaluate({"c": c, "k": k})) == \
            Fraction(original.evaluate({"x": x, "k": k}))


def test_a_long_sum_expression_verifies(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text('[problem]\nparties = 5\nlambda = "2"\n\n'
                    f'[observer]\nfunction = {{ expr = "{_long_sum_expression()}" }}\n',
                    encoding="utf-8")
    result = _run(["verify", str(path)])
    assert result.exit_code == 0, result.output[-800:]
    spec = loads(path.read_text(encoding="utf-8"))
    values = count_values(spec.agents[0].function, 5)
    assert values == tuple(Fraction(c + 100 * 10**15) for c in range(6))


# --------------------------------------------------------------------------- outputs

PROBLEMS = __import__("pathlib").Path(__file__).resolve().parent.parent / "problems"


@pytest.fixture
def blocker(tmp_path):
    """A file where an output directory should be: nothing can be created under it (as
    root too, unlike a directory without write permission)."""
    path = tmp_path / "blocker"
    path.write_text("a file, not a directory", encoding="utf-8")
    return path


@pytest.mark.parametrize("args", [
    ["verify", str(PROBLEMS / "multisymbol" / "max-3x2-gap.toml"), "--witness-dir", "{}/w"],
    ["verify", str(PROBLEMS / "approximate" / "xor-2-delta.toml"), "--witness-dir", "{}/w"],
    ["falsify", str(PROBLEMS / "xor-2.toml"), "--protocols", "3", "--save-best", "{}/b.toml"],
    ["falsify", str(PROBLEMS / "xor-2.toml"), "--protocols", "3", "--counterexamples",
     "{}/c"],
    ["survey", "--alphabet", "3", "--parties", "1", "--epsilon", "1.5", "--values", "3",
     "--accuracy", "average", "-j", "1", "--save", "{}/s"],
])
def test_outputs_that_cannot_be_written_are_exit_2(blocker, args):
    result = _run([a.format(blocker) for a in args])
    assert result.exit_code == 2, result.output[-800:]
    assert str(blocker) in result.output and "internal error" not in result.output
    assert "cannot" in result.output


def test_write_output_names_the_file(tmp_path):
    from dpverify.errors import InputError
    from dpverify.filenames import make_directory, write_output

    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="cannot write"):
        write_output(tmp_path / "d", "text")  # a directory where the file should be
    assert write_output(tmp_path / "f.txt", "text").read_text(encoding="utf-8") == "text"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="cannot create the output directory"):
        make_directory(tmp_path / "file" / "sub")
    assert make_directory(tmp_path / "a" / "b").is_dir()


# --------------------------------------------------------------------------- processes


def _group_members(pgid: int) -> list[str]:
    """The processes (zombies included) whose process group is `pgid`, from /proc."""
    import os

    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid:  # after pid (comm): state, ppid, pgrp
            members.append(f"{entry} {stat[:stat.rindex(')') + 1]} state {fields[0]}")
    return members


@pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="needs /proc")
def test_batch_leaves_no_process_of_its_group_behind(tmp_path):
    import subprocess
    import sys

    for name in ("xor-2.toml", "and-3.toml", "majority-5.toml"):
        (tmp_path / name).write_bytes((PROBLEMS / name).read_bytes())
    # a session of its own: the batch's pid is its process group
    process = subprocess.Popen([sys.executable, "-m", "dpverify", "batch", str(tmp_path),
                                "--jobs", "2", "--store", str(tmp_path / "s.sqlite")],
                               start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    _, stderr = process.communicate(timeout=240)
    assert process.returncode == 0, stderr[-800:]
    assert _group_members(process.pid) == []  # nothing running, and no zombie either
    assert "leaked" not in stderr and "resource_tracker" not in stderr
