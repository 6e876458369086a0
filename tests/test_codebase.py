"""The codebase's own rules (docs/architecture.md), checked so that they stay true: the
layer order of every package (imports point down), no import cycles, no module importing
another module's underscore names, click only at the command line (which reaches the
library through dpverify.api only), rich only in the console, the maths and the
independent checker free of I/O and solver code, and the checker's whole import closure
inside the trusted base."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpverify"
MODULES = sorted(PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_the_package_was_found():
    assert len(MODULES) > 40


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers(path):
    relative = path.relative_to(PACKAGE).as_posix()
    used = imports(path)
    if not relative.startswith("cli/"):
        assert not any(m == "click" or m.startswith("click.") for m in used), relative
    if not relative.startswith("console/"):
        assert not any(m == "rich" or m.startswith("rich.") for m in used), relative
    if relative.startswith(("theory/", "spec/")):  # pure maths and data: no solvers, no CLI
        banned = ("dpverify.verifiers", "dpverify.runner", "dpverify.research", "dpverify.cli",
                  "dpverify.console",
                  "highspy", "cvxpy")
        assert not any(m.startswith(banned) for m in used), (relative, used)
        # theory/ may build LPs (the data type and the builder) but never solve them
        builds = ("dpverify.lp.model", "dpverify.lp.builder") if relative.startswith(
            "theory/") else ()
        assert not any(m.startswith("dpverify.lp") and m not in builds for m in used), (
            relative, used)


# ------------------------------------------------------------------ the trusted base

# What the independent checker (dpverify/checker/, docs/architecture.md "The trusted base")
# may load: the package itself, the file formats (spec/, but not the construction's
# symmetry detection and orbit tables in spec/symmetric.py) with the names they share
# with the command line (defaults.py: constants only), the standard library,
# python-flint, and numpy only because spec/ itself imports it (the float copy of a
# tabulated gain table, the bit arrays of tabulation).
CHECKER_DPVERIFY = ("dpverify", "dpverify.errors", "dpverify.version", "dpverify.defaults",
                    "dpverify.spec")
CHECKER_PREFIXES = ("dpverify.checker", "dpverify.spec.")
CONSTRUCTION = ("dpverify.spec.symmetric", "dpverify.theory", "dpverify.verifiers", "dpverify.lp",
                "dpverify.runner", "dpverify.research", "dpverify.console", "dpverify.cli",
                "dpverify.api",
                "dpverify.sweeps")
THIRD_PARTY = ("flint", "numpy")


def module_file(name: str) -> Path | None:
    """The file of a dpverify module (a package's __init__.py), None for anything else."""
    parts = name.split(".")
    if parts[0] != "dpverify":
        return None
    base = PACKAGE.parent.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _run_time_nodes(tree: ast.AST):
    """ast.walk, without the bodies of `if TYPE_CHECKING:` (imports only a type checker
    runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) \
                    and child.test.id == "TYPE_CHECKING":
                todo.extend(child.orelse)
            else:
                todo.append(child)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports when it runs, at the top or inside functions (not under
    `if TYPE_CHECKING:`); `from p import m` counts m when it is a module of p."""
    out = set()
    for node in _run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names
                    if module_file(f"{node.module}.{a.name}") is not None}
    return out


def import_closure(start: str) -> tuple[set[str], dict[str, set[str]]]:
    """The dpverify modules `start` loads, transitively (parent packages included), and for
    each outside top-level name the dpverify modules that import it."""
    seen: set[str] = set()
    outside: dict[str, set[str]] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            parent = ".".join(parts[:i])
            path = module_file(parent)
            if path is None or parent in seen:
                continue
            seen.add(parent)
            for used in imported_modules(path):
                if used.split(".")[0] == "dpverify":
                    todo.append(used)
                else:
                    outside.setdefault(used.split(".")[0], set()).add(parent)
    return seen, outside


def test_the_checkers_import_closure_stays_in_the_trusted_base():
    modules, outside = import_closure("dpverify.checker")
    assert {"dpverify.checker.bits", "dpverify.checker.orbits", "dpverify.checker.symbols",
            "dpverify.spec.tables", "dpverify.spec.counts"} <= modules
    strays = [m for m in modules
              if not (m in CHECKER_DPVERIFY or m.startswith(CHECKER_PREFIXES))
              or m.startswith(CONSTRUCTION)]
    assert not strays, f"the checker's import closure leaves the trusted base: {strays}"
    foreign = sorted(t for t in outside if t not in sys.stdlib_module_names
                     and t not in THIRD_PARTY)
    assert not foreign, f"the checker's import closure reaches {foreign}"
    # numpy only through spec/, never imported by the checker itself
    assert all(m.startswith("dpverify.spec.") for m in outside.get("numpy", ())), outside


def test_the_import_closure_follows_function_level_imports():
    """Negative control: the closure of a construction module reaches the solvers and
    theory/, and a function-level import (verifiers/multiparty/settle.py imports the checker inside
    settle()) is followed."""
    modules, outside = import_closure("dpverify.verifiers.multiparty.settle")
    assert "dpverify.theory.exact" in modules and "dpverify.checker.bits" in modules
    assert "highspy" in outside or "scipy" in outside


RUNTIME = """
import json, sys
base = set(sys.modules)
from dpverify.checker import check_certificate, read_certificate
from dpverify.spec import loads
for text, cert in json.loads(sys.stdin.read()):
    result = check_certificate(loads(text), read_certificate(cert))
    assert result.ok, result.message
new = set(sys.modules) - base
print(json.dumps(sorted(new)))
"""


def test_checking_certificates_loads_only_the_trusted_base():
    """At run time too: a process that checks an all-input and an orbit certificate (built
    here, by the construction, in this process) loads nothing outside the trusted base."""
    import json
    import subprocess

    from dpverify.spec import loads
    from dpverify.verifiers.certifiers import certify_agent, dump_certificate
    from dpverify.verifiers.options import VerifyOptions

    jobs = []
    for parties, method in ((3, "auto"), (5, "orbit")):
        text = f'[problem]\nname = "x"\nparties = {parties}\nlambda = "2"\n' \
               '[observer]\nfunction = "majority"\n'
        spec = loads(text)
        cert = certify_agent(spec, spec.agents[0], "worst", options=VerifyOptions(method=method))
        jobs.append((text, dump_certificate(cert)))
    assert {json.loads(c)["format"] for _, c in jobs} == {
        "dpverify-certificate/1", "dpverify-orbit-certificate/1"}
    out = subprocess.run([sys.executable, "-c", RUNTIME], input=json.dumps(jobs),
                         capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    ours = [m for m in loaded if m.split(".")[0] == "dpverify"]
    strays = [m for m in ours if not (m in CHECKER_DPVERIFY or m.startswith(CHECKER_PREFIXES))
              or m.startswith(CONSTRUCTION)]
    assert "dpverify.checker.orbits" in ours and not strays, strays
    tops = {m.split(".")[0] for m in loaded}
    foreign = sorted(t for t in tops if t not in sys.stdlib_module_names
                     and t not in (*THIRD_PARTY, "dpverify", "cython_runtime")
                     and not t.startswith("_cython"))
    assert not foreign, foreign


# The most lines of dpverify that checking certificates may load (issue 24: 5,046 before,
# when spec/__init__ imported every kind's parser; 3,500 until the checker checked each
# repeated rule row once and made each entry's ball once, issue 25). docs/architecture.md
# quotes it.
CHECKER_LINES = 3510

CLOSURE = """
import json, pickle, sys
import dpverify.checker
imported = sorted(m for m in sys.modules if m.split(".")[0] == "dpverify")
from dpverify.checker import check_certificate, read_certificate
for spec, text in pickle.loads(sys.stdin.buffer.read()):
    result = check_certificate(spec, read_certificate(text))
    assert result.ok, result.message
checked = sorted(m for m in sys.modules if m.split(".")[0] == "dpverify")
print(json.dumps({"imported": imported, "checked": checked,
                  "files": {m: sys.modules[m].__file__ for m in checked}}))
"""


def one_certificate_of_each_format() -> list[tuple[object, str]]:
    """(spec, certificate JSON) for each of the seven formats, built by the construction
    (the four-ray one read from a file of the version before); the problems use
    expressions, so that checking them evaluates expressions too."""
    from dpverify.spec import loads
    from dpverify.spec.model import Accuracy
    from dpverify.verifiers.certifiers import certify_agent, dump_certificate
    from dpverify.verifiers.multiparty.all_inputs import all_inputs_interval_certificate
    from dpverify.verifiers.multiparty.orbit import orbit_interval_certificate
    from dpverify.verifiers.options import VerifyOptions

    def problem(head: str, agent: str) -> object:
        return loads(f'[problem]\nname = "x"\n{head}\n[observer]\n{agent}\n')

    expr = 'function = { expr = "x1 + x2 * x3" }\ngain = { expr = "-(f - y)**2" }'
    bits, orbits = problem('parties = 3\nlambda = "2"', expr), \
        problem('parties = 18\nlambda = "2"', 'function = { expr = "sum(x) % 3" }')
    symbols = problem('parties = 2\nlambda = "3"\nalphabet = 3', 'function = "max"')
    delta = problem('parties = 2\nlambda = "3"\ndelta = "1/10"', 'function = "xor"')
    options = VerifyOptions()
    jobs = [(spec, dump_certificate(certify_agent(spec, spec.agents[0], "worst")))
            for spec in (bits, orbits, symbols, delta)]
    # the four-ray format is no longer written: one certificate of the version before
    four_ray = PACKAGE.parent / "tests" / "data" / "four-ray" / "d.observer.worst.cert.json"
    jobs.append((loads('[problem]\nname = "d"\nparties = 2\nlambda = "3"\ndelta = "1/10"\n'
                       '[observer]\nfunction = "xor"\n'), four_ray.read_text(encoding="utf-8")))
    jobs.append((bits, dump_certificate(all_inputs_interval_certificate(
        bits, bits.agents[0], Accuracy.WORST, options).to_json("x"))))
    jobs.append((orbits, dump_certificate(orbit_interval_certificate(
        orbits, orbits.agents[0], Accuracy.WORST, options).to_json("x"))))
    return jobs


def test_checking_every_format_loads_at_most_the_trusted_base_s_lines():
    """A fresh process imports dpverify.checker and checks one certificate of each format
    (the specs arrive pickled, so no parser of problem files is needed): the dpverify
    modules it has loaded then, the trusted base, hold at most CHECKER_LINES lines, no
    parser of a file kind among them; docs/architecture.md quotes the limit."""
    import json
    import pickle
    import subprocess

    jobs = one_certificate_of_each_format()
    from dpverify.checker import CHECKERS

    assert sorted(json.loads(text)["format"] for _, text in jobs) == sorted(CHECKERS)
    out = subprocess.run([sys.executable, "-c", CLOSURE], input=pickle.dumps(jobs),
                         capture_output=True, check=True)
    seen = json.loads(out.stdout)
    lines = {m: len(Path(f).read_text(encoding="utf-8").splitlines())
             for m, f in seen["files"].items()}
    assert set(seen["checked"]) >= set(seen["imported"]) >= {"dpverify.checker.core"}
    assert not [m for m in seen["checked"] if "loader" in m or m.startswith(CONSTRUCTION)]
    assert sum(lines.values()) <= CHECKER_LINES, sorted(lines.items(), key=lambda t: -t[1])
    architecture = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"{CHECKER_LINES:,} lines" in architecture


def test_a_parser_is_loaded_when_a_file_is_loaded():
    """Negative control of the closure: spec/__init__ imports the parsers when asked."""
    import subprocess

    code = ("import sys, dpverify.spec\nassert 'dpverify.spec.loader' not in sys.modules\n"
            "dpverify.spec.loads('[problem]\\nparties = 1\\nepsilon = 1\\n"
            "[observer]\\nfunction = \"xor\"\\n')\n"
            "print('dpverify.spec.loader' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"


def test_the_import_scan_sees_what_it_claims(tmp_path):
    """Negative control: the scan finds plain, dotted, relative-free and nested imports."""
    module = tmp_path / "m.py"
    module.write_text("import click\nfrom rich.table import Table\n"
                      "def f():\n    import highspy\n", encoding="utf-8")
    assert {"click", "rich.table", "highspy"} <= imports(module)


# ------------------------------------------------------------------ the import graph

# docs/architecture.md, "Layers": top to bottom. Each layer is a list of units; a unit is
# the packages and modules (paths below dpverify/, without .py; "" is dpverify/__init__.py)
# that import each other freely. A module may import its own unit and any unit of a lower
# layer: never upwards, and never a sibling unit of its own layer (checker/ and theory/
# stand side by side).
LAYERS: list[list[tuple[str, ...]]] = [
    [("cli", "__main__")],
    [("console",)],
    [("api", "")],
    [("sweeps", "plotting")],
    [("research",)],
    [("runner",)],
    [("verifiers",)],
    [("checker",), ("theory",)],
    [("lp",)],
    [("problem",)],
    [("spec",)],
    [("errors", "status", "verdict", "reasons", "defaults", "policy", "clock", "filenames",
      "version", "notebook", "cachedir", "install", "configuration", "lazy", "records")],
]
# The modules the command line may import at run time (dpverify.console's sub-modules too);
# anything else only under `if TYPE_CHECKING:` (types for annotations).
CLI_MAY_IMPORT = ("dpverify.api", "dpverify.console", "dpverify.defaults", "dpverify.errors",
                  "dpverify.policy", "dpverify.status")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {module_name(p): p for p in MODULES}


@functools.cache  # each file parsed once per run (several tests ask for every module)
def imports_of(path: Path, *, type_checking: bool = False) -> list[tuple[str, str | None]]:
    """(module, name) for every dpverify import of a file, at the top or inside functions:
    `from m import n` gives (m.n, None) when m.n is a module, else (m, n); `import m` gives
    (m, None). Imports under `if TYPE_CHECKING:` only with `type_checking`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = ast.walk(tree) if type_checking else _run_time_nodes(tree)
    out: list[tuple[str, str | None]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "dpverify"]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level \
                and node.module.split(".")[0] == "dpverify":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.append((full, None) if full in NAMES else (node.module, alias.name))
    return out


def _owner(module: str) -> str:
    """The nearest module of the package that `module` names (a name inside it drops)."""
    while module not in NAMES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def graph() -> dict[str, set[str]]:
    """Module -> the modules it imports when it runs (top-level and function-level)."""
    return {name: {_owner(m) for m, _ in imports_of(path)} - {name}
            for name, path in NAMES.items()}


def layer_of(module: str) -> tuple[int, tuple[str, ...]]:
    """(layer index, unit) of a dpverify module; AssertionError when LAYERS omits it."""
    relative = module.removeprefix("dpverify").removeprefix(".")
    first = relative.split(".")[0]
    for index, layer in enumerate(LAYERS):
        for unit in layer:
            if first in unit:
                return index, unit
    raise AssertionError(f"{module} is in no layer of LAYERS (docs/architecture.md)")


def layer_violations(name: str, path: Path) -> list[str]:
    level, unit = layer_of(name)
    bad = []
    for target, _ in imports_of(path, type_checking=True):
        target = _owner(target)
        there, other = layer_of(target)
        if other != unit and there <= level:
            bad.append(f"{name} imports {target} ({'a sibling' if there == level else 'up'})")
    return bad


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan,
    iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


@functools.cache  # computed by the first test that asks, not at collection on every worker
def cycles() -> list[set[str]]:
    return strongly_connected(graph())




@pytest.mark.parametrize("name", sorted(NAMES))
def test_imports_point_down_the_layers(name):
    assert not layer_violations(name, NAMES[name])


@pytest.mark.parametrize("name", sorted(NAMES))
def test_no_module_is_in_an_import_cycle(name):
    cycle = next((c for c in cycles() if name in c), set())
    assert not cycle, f"{name} is in an import cycle with {sorted(cycle - {name})}"


@pytest.mark.parametrize("name", sorted(NAMES))
def test_no_module_imports_underscore_names(name):
    private = [f"{m}.{n}" for m, n in imports_of(NAMES[name], type_checking=True)
               if n is not None and n.startswith("_") and not n.startswith("__")]
    assert not private, f"{name} imports {private}"


@pytest.mark.parametrize("path", sorted(PACKAGE.joinpath("cli").glob("*.py")),
                         ids=lambda p: p.name)
def test_the_command_line_reaches_the_library_through_the_api_only(path):
    used = [_owner(m) for m, _ in imports_of(path)]
    strays = [m for m in used if not (m.startswith("dpverify.cli")
                                      or m.startswith(CLI_MAY_IMPORT))]
    assert not strays, f"{path.name} imports {strays}: go through dpverify.api"


def test_every_command_calls_the_api_function_of_its_name():
    """The command line and the API are one front end: each command has its function in
    dpverify.api, and its module calls it."""
    from dpverify import api
    from dpverify.cli import every_command

    function = {"verify": "verify_paths", "certify": "certify_paths",
                "check-cert": "check_cert", "audit": "audit_paths", "batch": "batch",
                "results": "results", "check": "check", "sweep": "sweep", "derive": "derive",
                "release": "release", "new": "new", "falsify": "falsify", "survey": "survey",
                "examples": "examples"}
    assert sorted(every_command()) == sorted(function)
    for command, name in function.items():
        assert callable(getattr(api, name)) and name in api.__all__, name
        callback = every_command()[command].callback
        source = Path(sys.modules[callback.__module__].__file__).read_text(encoding="utf-8")
        assert f"api.{name}(" in source, (command, name)


def test_the_graph_checks_see_what_they_claim(tmp_path, monkeypatch):
    """Negative controls: a cycle, an upward import and an underscore import are found."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        {"a", "b", "c"}]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
    module = tmp_path / "m.py"
    module.write_text("from dpverify.cli.app import main\n"
                      "def f():\n    from dpverify.spec.reader import _MISSING\n",
                      encoding="utf-8")
    monkeypatch.setitem(NAMES, "dpverify.spec.fake", module)
    assert layer_violations("dpverify.spec.fake", module) == [
        "dpverify.spec.fake imports dpverify.cli.app (up)"]
    assert ("dpverify.spec.reader", "_MISSING") in imports_of(module)
    assert layer_violations("dpverify.checker.fake", module)[-1].endswith("(up)")
    theory = tmp_path / "t.py"
    theory.write_text("import dpverify.checker.claim\n", encoding="utf-8")
    assert layer_violations("dpverify.theory.fake", theory) == [
        "dpverify.theory.fake imports dpverify.checker.claim (a sibling)"]


# One TOML parser (spec/reader.py parse_toml: the one-line errors of every loader) and one
# writer of the documents dpverify writes (spec/documents.py toml_text); runner/check.py
# edits `[expect]` tables in place with tomlkit, keeping the file's comments.
# configuration.py looks, with tomllib, whether a pyproject.toml has [tool.dpverify] before
# every command (without importing spec/); the configuration itself is read by parse_toml.
TOML_MODULES = {"tomllib": ("spec/reader.py", "configuration.py"),
                "tomlkit": ("spec/documents.py", "runner/check.py")}


@pytest.mark.parametrize("library", sorted(TOML_MODULES))
def test_one_toml_parser_and_one_writer(library):
    users = sorted(p.relative_to(PACKAGE).as_posix() for p in MODULES
                   if any(m == library or m.startswith(f"{library}.") for m in imports(p)))
    assert users == sorted(TOML_MODULES[library])


# ------------------------------------------------------------------ one solving context

# verifiers/solving.py is the one solving context (issue 24): the backend, threads,
# tolerances and the time policy of every LP. Only it (and lp/, the backends) calls
# lp.solve, sets a solver's time limit or builds HiGHS's basis finder; everyone else
# passes `options.solver()` down.
SOLVING = ("verifiers/solving.py",)


def solving_strays(path: Path) -> list[str]:
    """Where a module sets a solver time limit, calls lp.solve or builds a basis finder
    itself (line numbers)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if any(k.arg == "time_limit" for k in node.keywords):
                out.append(f"{node.lineno}: sets time_limit")
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", "")
            if name == "float_basis_finder":
                out.append(f"{node.lineno}: builds a basis finder")
        if isinstance(node, ast.ImportFrom) and node.module in (
                "dpverify.lp", "dpverify.lp.solve") and any(a.name == "solve"
                                                            for a in node.names):
            out.append(f"{node.lineno}: imports lp.solve")
    return out


def test_one_solving_context():
    strays = {p.relative_to(PACKAGE).as_posix(): solving_strays(p) for p in MODULES
              if not p.relative_to(PACKAGE).as_posix().startswith("lp/")
              and p.relative_to(PACKAGE).as_posix() not in SOLVING}
    assert not {k: v for k, v in strays.items() if v}


def test_the_solving_scan_sees_what_it_claims(tmp_path):
    """Negative control: the three ways around the solving context are found."""
    module = tmp_path / "m.py"
    module.write_text("from dpverify.lp import solve\n"
                      "def f(lp, o):\n    return solve(lp, 'highs', time_limit=o.t)\n"
                      "def g():\n    return float_basis_finder()\n", encoding="utf-8")
    assert [s.split(": ")[1] for s in solving_strays(module)] == [
        "imports lp.solve", "sets time_limit", "builds a basis finder"]
    assert solving_strays(PACKAGE / "verifiers" / "solving.py")  # it does all three itself


# ------------------------------------------------------------------ settings as types

# A problem's setting (bits, more symbols, delta > 0, ...: spec/setting.py) is computed
# once on the spec; everything that depends on it is chosen by a table keyed by it. Every
# table covers every key of its kinds, and nothing outside spec/ branches on the flags a
# setting is made from (`.approximate`, `.binary`) or compares a setting. (checker/ checks
# a certificate by its `format`; its own size guard reads the spec's flags.)
SETTING_FLAGS = ("approximate", "binary")
MAY_BRANCH = ("spec/", "checker/")


def _tables():
    """(name, table, its keys) of every table keyed by settings."""
    from dpverify.console.count import DERIVATION_VIEWS
    from dpverify.console.survey import SURVEY_VIEWS
    from dpverify.console.views import VIEWS
    from dpverify.research.falsify import REFUSALS
    from dpverify.research.survey import SURVEYS
    from dpverify.runner.notes import NOT_FOR, ONE_CERTIFICATE, SEEDED
    from dpverify.spec.setting import SETTINGS, Setting, keys
    from dpverify.sweeps.reference import CLOSED_FORMS
    from dpverify.verifiers.audit.bounds import BOUNDS
    from dpverify.verifiers.audit.protocol import AUDITS
    from dpverify.verifiers.certifiers import CERTIFIERS
    from dpverify.verifiers.count.verifier import SIDES
    from dpverify.verifiers.dispatch import DERIVATIONS, VERIFIERS

    problems = keys("multiparty", "count", "protocol")
    return [
        ("dispatch.VERIFIERS", VERIFIERS, problems),
        ("certifiers.CERTIFIERS", CERTIFIERS, problems),
        ("dispatch.DERIVATIONS", DERIVATIONS, keys("mechanism")),
        ("console.views.VIEWS", VIEWS, keys()),
        ("console.count.DERIVATION_VIEWS", DERIVATION_VIEWS, SETTINGS["mechanism"]),
        ("notes.NOT_FOR", NOT_FOR, keys()),
        ("notes.SEEDED", SEEDED, keys()),
        ("notes.ONE_CERTIFICATE", ONE_CERTIFICATE, keys()),
        ("audit.protocol.AUDITS", AUDITS, SETTINGS["protocol"]),
        ("audit.bounds.BOUNDS", BOUNDS, (Setting.BITS, Setting.SYMBOLS)),  # pure claims
        ("count.verifier.SIDES", SIDES, SETTINGS["count"]),
        ("falsify.REFUSALS", REFUSALS, SETTINGS["multiparty"]),
        ("sweeps.reference.CLOSED_FORMS", CLOSED_FORMS, SETTINGS["multiparty"]),
        # a survey: more symbols under pure DP, or bits under delta > 0
        ("research.survey.SURVEYS", SURVEYS, (Setting.SYMBOLS, Setting.DELTA)),
        ("console.survey.SURVEY_VIEWS", SURVEY_VIEWS, (Setting.SYMBOLS, Setting.DELTA)),
    ]


@pytest.mark.parametrize("index", range(15))
def test_every_dispatch_table_covers_every_key(index):
    name, table, wanted = _tables()[index]
    assert set(table) == set(wanted), name


def test_the_tables_are_all_listed():
    assert len(_tables()) == 15


def setting_branches(path: Path) -> list[str]:
    """Where a module branches on a setting: reads the flags it is made from, or compares
    a setting (a table lookup by `spec.setting` is not a branch)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []

    def is_setting(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "setting") or (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Setting")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SETTING_FLAGS \
                and isinstance(node.ctx, ast.Load):
            out.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in SETTING_FLAGS:
            out.append(f"{node.lineno}: getattr {node.args[1].value}")
        elif isinstance(node, ast.Compare) and any(
                is_setting(n) for n in (node.left, *node.comparators)) and not any(
                isinstance(n, ast.Constant) and n.value is None
                for n in (node.left, *node.comparators)):  # `is None`: no spec, no setting
            out.append(f"{node.lineno}: compares a setting")
        elif isinstance(node, ast.Match) and is_setting(node.subject):
            out.append(f"{node.lineno}: matches a setting")
    return out


def test_no_setting_branch_outside_spec_and_the_tables():
    found = {p.relative_to(PACKAGE).as_posix(): setting_branches(p) for p in MODULES
             if not p.relative_to(PACKAGE).as_posix().startswith(MAY_BRANCH)}
    assert not {k: v for k, v in found.items() if v}


def test_the_setting_scan_sees_what_it_claims(tmp_path):
    """Negative control: each kind of setting branch is found, a table lookup is not."""
    module = tmp_path / "m.py"
    module.write_text("def f(spec, T):\n    if spec.approximate:\n        return 1\n"
                      "    if getattr(spec, 'binary', True):\n        return 2\n"
                      "    if spec.setting is Setting.DELTA:\n        return 3\n"
                      "    if spec.setting is None:\n        return 4\n"
                      "    return T[spec.setting]\n", encoding="utf-8")
    assert [s.split(": ")[1] for s in setting_branches(module)] == [
        ".approximate", "getattr binary", "compares a setting"]
