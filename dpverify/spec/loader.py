"""TOML files -> validated, frozen specs (spec.md is the contract): the kind of a file, and
the one parser of each kind of problem file.

A problem file is data: loading reads the one file, parses it with `reader.parse_toml`,
and evaluates expressions only through the safe evaluator. Every error is a SpecError
whose message names the file, the key, the bad value and what is allowed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from dpverify.errors import SpecError
from dpverify.spec.model import Kind
from dpverify.spec.reader import Table, parse_toml, read_text

if TYPE_CHECKING:
    from dpverify.spec.count_model import CountSpec
    from dpverify.spec.model import MultipartySpec
    from dpverify.spec.protocol_model import ProtocolSpec

Spec: TypeAlias = "MultipartySpec | CountSpec | ProtocolSpec"

# One parser per kind, (module, function): the kind is dispatched here, once, and only the
# parser of the file's kind is imported (a multi-party file loads no count or protocol parser).
PARSERS: dict[Kind, tuple[str, str]] = {
    Kind.MULTIPARTY: ("multiparty_loader", "parse_multiparty"),
    Kind.COUNT: ("count_loader", "parse_count"),
    Kind.PROTOCOL: ("protocol_loader", "parse_protocol")}


def load(path: str | Path) -> Spec:
    """Read and validate one problem file (any kind)."""
    return loads(read_text(path), source=str(path), default_name=Path(path).stem)


def loads(text: str, *, source: str = "<string>", default_name: str = "problem") -> Spec:
    """Validate the text of one problem file (any kind); `source` names it in messages."""
    document = parse_toml(text, source)
    _refuse_other_kinds(document, source)
    root = Table(document, source, "")
    problem = root.table("problem")
    kind = Kind(problem.string("kind", "multiparty", choices=tuple(k.value for k in PARSERS)))
    module, parser = PARSERS[kind]
    parse = getattr(importlib.import_module(f"dpverify.spec.{module}"), parser)
    return parse(root, problem, default_name=default_name)


# Top-level tables of dpverify's own files: problem files of every kind, mechanism files.
OWN_TABLES = ("problem", "observer", "party", "expect", "consumer", "round", "mechanism")


def file_kind(document: dict[str, Any]) -> str:
    """What a parsed TOML document is: `problem` (it has a [problem] table), `mechanism`
    (a [mechanism] table for `dpverify derive`), `foreign` (none of dpverify's tables, such
    as a pyproject.toml), or `incomplete` (some of a problem's tables, no [problem])."""
    if "problem" in document:
        return "problem"
    if "mechanism" in document:
        return "mechanism"
    if not any(name in document for name in OWN_TABLES):
        return "foreign"
    return "incomplete"


def _refuse_other_kinds(document: dict[str, Any], source: str) -> None:
    """A file that is not a problem file gets a message that says what it is."""
    kind = file_kind(document)
    if kind == "mechanism":
        raise SpecError(source, "", None, "a mechanism file ([mechanism] table), not a problem "
                        f"file: check it with `dpverify derive {source}`")
    if kind == "foreign":
        raise SpecError(source, "", None, "not a dpverify problem file (no [problem] table); "
                        "`dpverify new multiparty NAME` writes a template")
