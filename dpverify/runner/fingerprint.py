"""Which build of dpverify computed a result: the version and a hash of the package's source.

The results store keys every row by this build id, not by `__version__` alone: the version
stays `0.1.0` in an editable install while the code changes, and a store keyed by it
served the numbers of the old code after a fix. The id is `VERSION+src.HASH`, HASH the
first 16 hex digits of the SHA-256 of every `*.py` file of the installed `dpverify`
package (path and bytes, in path order; about 130 files, 1.3 MB, a few milliseconds),
computed once per process. A worker reports the id of the code it ran, so a row names
the build that computed it even on a remote Dask worker.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from dpverify.version import __version__


def source_hash(package: Path | None = None) -> str:
    """The SHA-256 (hex) of the `*.py` files of `package` (default: the dpverify package
    this module belongs to, hashed once per process), their paths relative to the package
    and their bytes, in path order (`__pycache__` left out)."""
    return _own_hash() if package is None else _tree_hash(package)


@functools.cache
def _own_hash() -> str:
    return _tree_hash(Path(__file__).resolve().parents[1])


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def build_id() -> str:
    """This process's build of dpverify: `VERSION+src.HASH` (see the module docstring)."""
    try:
        return f"{__version__}+src.{source_hash()[:16]}"
    except OSError:  # the sources cannot be read (a frozen or zipped install)
        return __version__
