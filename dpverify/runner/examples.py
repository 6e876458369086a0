"""`dpverify examples DIR`: the problem files that ship with dpverify, written out.

The package carries the repository's `problems/` (the shipped problems: theorems'
instances, counterexamples, audits, research instances) and `examples/` (mechanism
files) as package data, `dpverify/shipped/`. In the repository those two folders are
symbolic links to `problems/` and `examples/` at its top, so each file exists once and
`make run`, CI and the docs read them where they always were; a wheel holds copies. Written
into DIR, they sit where every example of the README and docs/ expects them
(`DIR/problems/and-3.toml`), so a user who installed a wheel runs those examples from DIR.

Nothing is overwritten: a file already in DIR with other content is an InputError (exit 2)
before anything is written; one with the same content is left as it is.
"""

from __future__ import annotations

import os
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any, ClassVar

from dpverify.errors import InputError
from dpverify.notebook import Notebook
from dpverify.records import record

FOLDERS = ("problems", "examples")  # the shipped folders, written under DIR by these names


@record(repr=False)
class WrittenExamples(Notebook):
    """What `write_examples` did: the folder, the files written and those already there."""

    notebook_columns: ClassVar[tuple[str, ...]] = ("file", "status")

    folder: Path
    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]

    @property
    def files(self) -> int:
        return len(self.written) + len(self.unchanged)

    def to_dict(self) -> dict[str, Any]:
        """The folder, and each file with `written` or `unchanged` (already there)."""
        return {"folder": str(self.folder), "files": [
            *({"file": str(p), "status": "written"} for p in self.written),
            *({"file": str(p), "status": "unchanged"} for p in self.unchanged)]}

    def notebook_title(self) -> str:
        return (f"WrittenExamples {self.folder}: {len(self.written)} written, "
                f"{len(self.unchanged)} unchanged")


def shipped() -> Traversable:
    """The package's `shipped/` folder (problems/ and examples/)."""
    return resources.files("dpverify") / "shipped"


def shipped_files() -> list[tuple[Path, bytes]]:
    """(path relative to DIR, bytes) of every shipped `*.toml`, in path order."""
    out: list[tuple[Path, bytes]] = []

    def walk(node: Traversable, relative: Path) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir():
                walk(child, relative / child.name)
            elif child.name.endswith(".toml"):
                out.append((relative / child.name, child.read_bytes()))

    root = shipped()
    for name in FOLDERS:
        folder = root / name
        if folder.is_dir():
            walk(folder, Path(name))
    return out


def write_examples(folder: str | os.PathLike[str]) -> WrittenExamples:
    """Write the shipped problems into `folder` (made when missing): `folder/problems/...`
    and `folder/examples/...`. InputError (exit 2), with nothing written, when a file is
    there with other content, or when the package holds no examples (a broken install)."""
    target = Path(folder)
    files = shipped_files()
    if not files:
        raise InputError("this installation of dpverify holds no example problems "
                         "(dpverify/shipped/ is empty): reinstall it")
    clashes = []
    todo: list[tuple[Path, bytes]] = []
    unchanged: list[Path] = []
    for relative, data in files:
        path = target / relative
        if path.exists():
            if not path.is_file() or path.read_bytes() != data:
                clashes.append(path)
            else:
                unchanged.append(path)
        else:
            todo.append((path, data))
    if clashes:
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        raise InputError(f"{clashes[0]}: exists with other content{more}; nothing written "
                         "(choose another folder, or move those files away)")
    written = []
    try:
        for path, data in todo:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    except OSError as exc:
        raise InputError(f"{target}: cannot write the examples: {exc.strerror}") from None
    return WrittenExamples(target, tuple(written), tuple(unchanged))
