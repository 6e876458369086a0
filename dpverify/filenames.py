"""File names made from problem names, and output paths that stay in their directory.

A problem's `name` is free text (`name = "../../escaped"` is a valid TOML string), but the
certificates, witness files, counterexamples and survey instances dpverify writes are
named after it. `file_stem` turns any name into one plain file name component, and
`output_path` joins it to the directory the user gave and refuses any result outside it,
so that no output leaves that directory whatever the name says.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from dpverify.cachedir import make_dirs
from dpverify.errors import InputError

# Letters and digits of any script, `_`, `-`, `+` and `.`; anything else (a path
# separator, a space, a control character, NUL, a colon) becomes `_`.
_UNSAFE = re.compile(r"[^\w.+-]+")
# At most this many UTF-8 bytes per stem: a certificate adds about 40 to it
# (".party-100000.average.cert.json"), and file systems allow 255.
MAX_STEM_BYTES = 120
_HASH_CHARS = 8


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def file_stem(name: str, *, fallback: str = "problem") -> str:
    """`name` as one plain file name component: unchanged when it is already safe (letters,
    digits, `_`, `-`, `+`, `.`; not empty, not starting with `.`, `_` or `-`; at most
    MAX_STEM_BYTES bytes),
    else its safe characters (`fallback` when none are left) followed by `-` and eight hex
    digits of its SHA-256, so that two different names never share a file."""
    safe = _UNSAFE.sub("_", name).lstrip("._-")
    if safe and safe == name and len(name.encode("utf-8")) <= MAX_STEM_BYTES:
        return name
    safe = safe or fallback
    budget = MAX_STEM_BYTES - _HASH_CHARS - 1
    # every character is at least one byte: cut to `budget` characters first, so that the
    # byte trim below runs on a short string (linear in the name, whatever its length)
    safe = safe[:budget]
    while len(safe.encode("utf-8", "surrogatepass")) > budget:
        safe = safe[:-1]
    return f"{safe}-{_digest(name)}"


def make_directory(directory: str | os.PathLike[str]) -> Path:
    """`directory`, created with its parents when missing (a `.dpverify` folder on its way
    marked as a cache: dpverify.cachedir.make_dirs); InputError (exit 2, one line) when it
    cannot be, as `certify -o` says."""
    folder = Path(directory)
    try:
        make_dirs(folder)
    except OSError as exc:
        raise InputError(f"{folder}: cannot create the output directory: "
                         f"{exc.strerror or exc}") from None
    return folder


def write_output(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path`; InputError (exit 2, one line) when it cannot be
    written (a directory without write permission, a full disk, a name that is a
    directory)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def output_path(directory: str | Path, filename: str) -> Path:
    """`directory / filename`, refused (InputError, exit 2) unless it names a file directly
    inside `directory`: `filename` must be one path component, not `.` or `..`."""
    folder = Path(directory)
    if (not filename or filename in (".", "..") or "\x00" in filename
            or Path(filename).name != filename or "/" in filename or "\\" in filename):
        raise InputError(f"{filename!r}: not a plain file name; nothing is written outside "
                         f"{folder}")
    target = folder / filename
    if target.resolve().parent != folder.resolve():
        raise InputError(f"{target}: outside the output directory {folder}; not written")
    return target
