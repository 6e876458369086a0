"""The codebase's own rules (docs/architecture.md), checked so that they stay true:
small modules, click only at the command line, rich only in the console, the maths and the
independent checker free of I/O and solver code, and the checker's whole import closure
inside the trusted base."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpverify"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 500


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
def test_no_module_exceeds_500_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


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
# symmetry detection and orbit tables in spec/symmetric.py), the standard library,
# python-flint, and numpy only because spec/ itself imports it (the float copy of a
# tabulated gain table, the bit arrays of tabulation).
CHECKER_DPVERIFY = ("dpverify", "dpverify.errors", "dpverify.spec")
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
    from dpverify.verifiers.multiparty.certify import certify_agent, dump_certificate
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


def test_the_import_scan_sees_what_it_claims(tmp_path):
    """Negative control: the scan finds plain, dotted, relative-free and nested imports."""
    module = tmp_path / "m.py"
    module.write_text("import click\nfrom rich.table import Table\n"
                      "def f():\n    import highspy\n", encoding="utf-8")
    assert {"click", "rich.table", "highspy"} <= imports(module)
