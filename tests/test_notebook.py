"""Issue 26, point 9: every result and report in a notebook (dpverify/notebook.py). A
compact repr (a title and a table, no arrays), `_repr_html_` (a table whose rows and
columns are the records'), `to_records()` (flat, plain JSON values), `to_pandas()` (and
a clear error without pandas), and `json.dumps(x.to_dict())`; every type the API returns
has them (read from the API's return annotations, so a new type cannot be forgotten)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import typing
from html.parser import HTMLParser
from pathlib import Path

import pytest

import dpverify
from dpverify import api
from dpverify.errors import InputError
from dpverify.notebook import MAX_ROWS, Notebook, cell_text, records_of

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"


class Table(HTMLParser):
    """The <th> texts and the number of body rows of an HTML table."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.rows = 0
        self.cells: list[str] = []
        self._where: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("th", "td"):
            self._where = tag
        if tag == "tr":
            self.rows += 1

    def handle_endtag(self, tag):
        self._where = None

    def handle_data(self, data):
        if self._where == "th":
            self.headers.append(data)
        elif self._where == "td":
            self.cells.append(data)


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> dict[str, Notebook]:
    """One object of every type the API returns, built from the shipped problems."""
    tmp = tmp_path_factory.mktemp("notebook")
    store = tmp / "store.sqlite"
    folder = tmp / "check"
    folder.mkdir()
    shutil.copy(PROBLEMS / "xor-2.toml", folder / "xor-2.toml")
    wrong = (PROBLEMS / "xor-2.toml").read_text().replace("average = 0.6067761335170362",
                                                          "average = 0.123")
    (folder / "wrong.toml").write_text(wrong.replace('name = "xor-2"', 'name = "wrong"'))
    certification = dpverify.certify(PROBLEMS / "and-3.toml", tmp / "certs")
    delta_mechanism = tmp / "delta.toml"  # RR(3, 1/10) on one bit, claiming (epsilon, delta)
    delta_mechanism.write_text('[mechanism]\nalpha = "1/3"\ndelta = "1/10"\nmatrix = '
                               '[["1/10", "27/40", "9/40", 0], [0, "9/40", "27/40", "1/10"]]\n')
    out: dict[str, Notebook] = {
        "verify": dpverify.verify(PROBLEMS / "and-3.toml"),
        "count": dpverify.verify(PROBLEMS / "count" / "abs-10.toml"),
        "audit": dpverify.audit(PROBLEMS / "protocols" / "repeated-xor-2.toml"),
        "approximate": dpverify.verify(PROBLEMS / "approximate" / "bit-1-delta.toml"),
        "symbols": dpverify.verify(PROBLEMS / "multisymbol" / "max-3x2-gap.toml",
                                   witness_dir=str(tmp / "w")),
        "mechanism": dpverify.audit(ROOT / "examples" / "remap-audit.toml"),
        "verify_paths": dpverify.verify_paths([PROBLEMS / "xor-2.toml",
                                               PROBLEMS / "count" / "abs-10.toml"]),
        "certify": certification,
        "certify_paths": dpverify.certify_paths([PROBLEMS / "xor-2.toml"], tmp / "c2"),
        "check_cert": dpverify.check_cert(PROBLEMS / "and-3.toml",
                                          sorted(c.path for c in certification.certificates)),
        "batch": dpverify.batch(PROBLEMS / "protocols", jobs=1, store=store),
        "check": dpverify.check(folder, store=tmp / "check.sqlite", jobs=1),
        "sweep": dpverify.sweep(PROBLEMS / "xor-4.toml", epsilon="0.5,1,2", jobs=1),
        "derive": dpverify.derive(ROOT / "examples" / "geometric-remap.toml"),
        "derive_delta": dpverify.derive(delta_mechanism),
        "release": dpverify.release(10, "1/10,1/2,9/10", 4, seed=7, check=True),
        "falsify": dpverify.falsify(PROBLEMS / "xor-2.toml", protocols=10, climb=5),
        "survey": dpverify.survey(alphabet=3, parties=1, epsilon="1", jobs=1, restarts=1),
        "profile": dpverify.privacy_profile(PROBLEMS / "protocols" / "adaptive-xor-2.toml"),
    }
    out["results"] = dpverify.results(store)[0]
    out["result"] = out["verify"].results[0]
    out["file"] = out["verify_paths"].files[0]
    out["point"] = out["sweep"].points[0]
    out["item"] = out["batch"].items[0]
    out["certificate"] = certification.certificates[0]
    out["certificate_check"] = out["check_cert"][0]
    out["mismatch"] = out["check"].mismatches[0]
    out["campaign_result"] = out["falsify"].results[0]
    for name in ("count", "audit", "approximate", "symbols", "mechanism"):
        out[f"{name}_result"] = out[name].results[0]
    return out


NAMES = ["verify", "count", "audit", "approximate", "symbols", "mechanism", "verify_paths",
         "certify", "certify_paths", "check_cert", "batch", "check", "sweep", "derive",
         "derive_delta",
         "release", "falsify", "survey", "profile", "results", "result", "file", "point",
         "item", "certificate", "certificate_check", "mismatch", "campaign_result",
         "count_result", "audit_result", "approximate_result", "symbols_result",
         "mechanism_result"]


@pytest.mark.parametrize("name", NAMES)
def test_every_result_has_the_notebook_view(shown, name):
    obj = shown[name]
    assert isinstance(obj, Notebook)
    records = obj.to_records()
    assert records and all(isinstance(r, dict) for r in records)
    assert json.loads(json.dumps(records)) == records  # plain JSON values only
    for r in records:  # flat: nested objects are dotted keys
        assert not any(isinstance(v, dict) for v in r.values())
    text = repr(obj)
    lines = text.splitlines()
    assert lines[0].startswith(type(obj).__name__)
    assert len(lines) <= MAX_ROWS + 4, text
    assert "array(" not in text and "dtype" not in text and "Fraction(" not in text
    page = Table()
    page.feed(obj._repr_html_())
    columns = obj._notebook_view()[1]
    assert page.headers == [c.replace("_", " ") for c in columns]
    rows = obj.notebook_rows()
    assert page.rows == 1 + min(len(rows), MAX_ROWS)  # the header and the rows
    to_dict = getattr(obj, "to_dict", None) or obj.to_json
    assert json.loads(json.dumps(to_dict())) == to_dict()


def test_the_table_shows_the_values_of_the_records(shown):
    """The repr and the HTML carry the CLI's numbers (12 digits), row by row; arrays of a
    count result (an optimal mechanism, a post-processing) are left out."""
    count = shown["count"]
    r = count.results[0]
    assert r.mechanism is not None and r.post_processing is not None  # arrays are there
    text = repr(count)
    assert f"{r.mechanism_optimum:.12g}" in text and f"{r.geometric_value:.12g}" in text
    assert len(text.splitlines()) == 4  # title, header, rule, one row
    default = dataclasses.fields(r)  # the dataclass repr would print every array
    assert any(f.name == "mechanism" for f in default)
    page = Table()
    page.feed(count._repr_html_())
    assert f"{r.mechanism_optimum:.12g}" in page.cells and "optimal" in page.cells
    verify = shown["verify"]
    assert [row["agent"] for row in verify.to_records()] == \
        [x.agent for x in verify.results]
    assert {row["problem"] for row in verify.to_records()} == {"and-3"}


def test_records_carry_the_objects_around_them():
    obj = {"problem": "p", "verdict": "gap", "lambdas": [1.5, 2.0], "counts": {"gap": 1},
           "results": [{"agent": "observer", "verdict": "optimal",
                        "proof": {"status": "proved", "width": 0.0}},
                       {"agent": "party:1", "verdict": "gap"}]}
    rows = list(records_of(obj))
    assert rows[0] == {"problem": "p", "lambdas": [1.5, 2.0], "agent": "observer",
                       "verdict": "optimal", "proof.status": "proved", "proof.width": 0.0}
    assert rows[1]["verdict"] == "gap" and "counts" not in rows[1]
    # a problem without results: one row, its own fields
    assert list(records_of({"problem": "q", "reason": "invalid", "results": []})) == \
        [{"problem": "q", "reason": "invalid"}]
    # nested reports: a report of files of results
    report = {"counts": {"optimal": 1}, "files": [obj]}
    assert len(list(records_of(report))) == 2


class Many(Notebook):
    def __init__(self, n: int) -> None:
        self.n = n

    def to_dict(self):
        return {"problem": "many", "results": [{"agent": f"party:{i}", "gap": 0.5 * i}
                                                for i in range(self.n)]}


def test_a_long_table_shows_its_first_rows():
    many = Many(MAX_ROWS + 5)
    text = repr(many)
    assert text.splitlines()[-1].startswith("... 5 more rows")
    assert f"party:{MAX_ROWS - 1}" in text and f"party:{MAX_ROWS}" not in text
    assert "5 more rows" in many._repr_html_()
    assert len(many.to_records()) == MAX_ROWS + 5
    assert "more rows" not in repr(Many(MAX_ROWS))  # the control: all rows fit


def test_cells_read_as_on_the_command_line():
    assert cell_text(0.5493430832841081) == "0.549343083284"
    assert cell_text(None) == "-" and cell_text(float("nan")) == "-"
    assert cell_text(True) == "yes" and cell_text([1.5, 2.0]) == "[1.5, 2]"
    assert cell_text(list(range(10))) == "[10 values]"
    assert cell_text("x" * 100).endswith("...") and len(cell_text("x" * 100)) == 60


def test_a_view_without_columns_is_its_title_alone():
    """A check whose expectations all held has no mismatch to tabulate: its repr is one
    line, and its HTML the caption alone, not rows of empty cells (`<tr></tr>`); the
    control, a check with a mismatch, has its row."""
    class Clean(Notebook):
        notebook_columns = ("problem", "agent", "expected", "got")

        def __init__(self, mismatches):
            self.mismatches = mismatches

        def to_dict(self):
            return {"problems": 1, "checked": 2, "mismatches": self.mismatches}

        def notebook_title(self):
            return f"Clean: {len(self.mismatches)} mismatches"

    clean = Clean([])
    assert repr(clean) == "Clean: 0 mismatches"
    assert "<tr" not in clean._repr_html_() and "Clean: 0 mismatches" in clean._repr_html_()
    one = Clean([{"problem": "p", "agent": "observer", "expected": 0.5, "got": 0.6}])
    assert one._repr_html_().count("<tr>") == 2  # the header and the mismatch


def test_html_escapes_what_it_shows():
    class Odd(Notebook):
        def to_dict(self):
            return {"problem": "<b>x</b>", "verdict": "optimal"}

    page = Odd()._repr_html_()
    assert "<b>" not in page and "&lt;b&gt;" in page


def test_to_pandas_gives_the_records_as_a_data_frame(shown):
    pandas = pytest.importorskip("pandas")
    for name in ("verify", "batch", "sweep", "profile"):
        obj = shown[name]
        frame = obj.to_pandas()
        assert isinstance(frame, pandas.DataFrame)
        records = obj.to_records()
        assert len(frame) == len(records)
        assert list(frame.columns) == list(dict.fromkeys(k for r in records for k in r))
    frame = shown["verify"].to_pandas()
    assert list(frame["rr_value"]) == [r.rr_value for r in shown["verify"].results]


def test_to_pandas_without_pandas_says_how_to_install_it(shown, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now fails
    with pytest.raises(InputError, match="pip install pandas"):
        shown["verify"].to_pandas()
    assert shown["verify"].to_records()  # the control: records need nothing


def test_json_dumps_of_a_result_needs_to_dict(shown):
    """`json.dumps(result)` is not JSON (a dataclass); `json.dumps(result.to_dict())` is,
    as docs/api.md says."""
    with pytest.raises(TypeError):
        json.dumps(shown["verify"])
    assert json.loads(json.dumps(shown["verify"].to_dict()))["problem"] == "and-3"


def _classes(hint) -> list[type]:
    """The classes a return annotation names (inside unions, lists and tuples)."""
    origin = typing.get_origin(hint)
    if origin is None:
        return [hint] if isinstance(hint, type) else []
    return [c for arg in typing.get_args(hint) for c in _classes(arg)]


NOT_RESULTS = {"Problem", "Figure", "Path", "str", "int", "bool", "float", "NoneType",
               "VerifyOptions", "Store", "ExitStatus", "Executor", "Fraction",
               "Option", "Any"}  # option_descriptions: what the options are, not results


def test_every_type_the_api_returns_is_shown_in_a_notebook():
    """Read from the annotations of dpverify.api's functions: a new result type that does
    not mix in Notebook fails here."""
    names = api.__dict__
    hints = {}
    for name in api.__all__:
        fn = names.get(name)
        if callable(fn) and not isinstance(fn, type):
            hints[name] = typing.get_type_hints(fn, globalns=_api_namespace()).get("return")
    returned = {c for hint in hints.values() for c in _classes(hint)}
    results = [c for c in returned if c.__name__ not in NOT_RESULTS]
    assert len(results) >= 12, sorted(c.__name__ for c in results)
    missing = [c.__name__ for c in results if not issubclass(c, Notebook)]
    assert not missing


def _api_namespace() -> dict:
    """dpverify.api's names with those it imports only for type checking (read from its
    `if TYPE_CHECKING:` block)."""
    import ast
    import importlib

    names = dict(vars(api))
    tree = ast.parse(Path(api.__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    module = importlib.import_module(imp.module)
                    names.update({a.asname or a.name: getattr(module, a.name)
                                  for a in imp.names})
    return names
