"""`dpverify audit` on count mechanisms ([mechanism] + [consumer]): the exact alpha, the
consumer's loss under its best post-processing against the optimal mechanism's, and
derivability from the geometric mechanism."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.spec.mechanism_audit import loads_mechanism_audit
from dpverify.theory.count.geometric import geometric_matrix
from dpverify.verifiers.audit.mechanism import audit_mechanism, exact_privacy_level
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]


def mechanism(rows, alpha: str = "1/2", consumer: str = 'loss = "abs"') -> str:
    matrix = ",\n".join("  [" + ", ".join(f'"{v}"' for v in row) + "]" for row in rows)
    return f'[mechanism]\nalpha = "{alpha}"\nmatrix = [\n{matrix}\n]\n[consumer]\n{consumer}\n'


def geometric(alpha: Fraction, n: int = 3):
    return [[str(v) for v in row] for row in geometric_matrix(alpha, n)]


def audit(text: str):
    return audit_mechanism(loads_mechanism_audit(text, source="m.toml"), VerifyOptions())


def test_the_geometric_mechanism_is_optimal_and_derivable():
    result = audit(mechanism(geometric(Fraction(1, 2))))
    (r,) = result.results
    assert result.header["achieved_alpha"] == "1/2" and result.header["private"] is True
    assert result.header["derivable"] is True and r.verdict.value == "optimal"
    assert r.mechanism_loss == pytest.approx(r.optimal_loss, abs=1e-9)


def test_a_more_private_mechanism_is_suboptimal_not_a_failure():
    """G at alpha = 3/4 claims only 1/2: it is private (alpha* = 3/4 >= 1/2), derivable
    from G_(1/2) (GS Lemma 3), and its consumer loses more than the optimum at 1/2."""
    result = audit(mechanism(geometric(Fraction(3, 4))))
    (r,) = result.results
    assert result.header["achieved_alpha"] == "3/4" and result.header["derivable"] is True
    assert r.verdict.value == "suboptimal" and r.mechanism_loss > r.optimal_loss + 1e-6
    # at its own level it is the geometric mechanism: optimal there
    assert r.mechanism_loss == pytest.approx(r.optimal_loss_achieved, abs=1e-9)


def test_the_identity_is_not_private():
    rows = [["1" if i == j else "0" for j in range(4)] for i in range(4)]
    result = audit(mechanism(rows))
    assert result.header["achieved_alpha"] == "0" and result.header["private"] is False
    assert result.results[0].verdict.value == "not-private"
    assert result.header["derivable"] is False


def test_exact_alpha_by_hand():
    rows = [[Fraction(3, 4), Fraction(1, 4)], [Fraction(1, 2), Fraction(1, 2)],
            [Fraction(1, 3), Fraction(2, 3)]]
    # rows 0-1: min(3/4, 1/2)/max = 2/3 and 1/4 / 1/2 = 1/2; rows 1-2: 2/3 and 3/4
    assert exact_privacy_level(rows) == Fraction(1, 2)


def test_a_bayesian_consumer():
    text = mechanism(geometric(Fraction(1, 2)),
                     consumer='loss = "square"\nmodel = "bayes"\nprior = [1, 2, 2, 1]')
    (r,) = audit(text).results
    assert r.accuracy == "bayes" and r.verdict.value == "optimal"


def test_the_shipped_example_through_the_cli():
    out = CliRunner().invoke(main, ["audit", str(ROOT / "examples" / "remap-audit.toml"),
                                    "--json"])
    assert out.exit_code == 1, out.output  # suboptimal is a finding
    (obj,) = json.loads(out.stdout)
    assert obj["kind"] == "mechanism" and obj["derivable"] is True
    assert obj["results"][0]["verdict"] == "suboptimal"
    assert 0 < obj["results"][0]["efficiency"] < 1


@pytest.mark.parametrize("text, message", [
    ('[mechanism]\nalpha = "1/2"\nmatrix = [["1"]]\n',
     "a mechanism file without a [consumer] table: `dpverify derive` checks it"),
    (mechanism(geometric(Fraction(1, 2)), consumer='loss = "abs"\nmodl = 1'),
     "`consumer.modl` = 1: unknown key"),
    (mechanism(geometric(Fraction(1, 2))) + "[extra]\n", "`extra`"),
])
def test_bad_mechanism_audit_files(tmp_path, text, message):
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    out = CliRunner().invoke(main, ["audit", str(path)])
    assert out.exit_code == 2, out.output
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_the_mechanism_tables_fit_80_columns_without_cutting_a_number():
    """Issue 17, item 15: the consumer table splits in two on an 80-column terminal."""
    import io
    import re

    from rich.console import Console

    from dpverify.console.audit import print_mechanism
    from dpverify.console.numbers import fmt

    result = audit(mechanism(geometric(Fraction(1, 3), 4), alpha="1/3"))

    def printed(width: int) -> str:
        buffer = io.StringIO()
        print_mechanism(Console(file=buffer, width=width, force_terminal=True, no_color=True,
                                markup=False, highlight=False), result)
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())

    narrow = printed(80)
    assert max(len(line) for line in narrow.splitlines()) <= 80 and "…" not in narrow
    (r,) = result.results
    for value in (r.mechanism_loss, r.optimal_loss, r.optimal_loss_achieved,
                  r.geometric_value):
        assert fmt(value) in narrow
    assert max(len(line) for line in printed(300).splitlines()) > 80  # the control
