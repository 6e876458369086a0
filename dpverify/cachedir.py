"""The `.dpverify/` folder is a cache: marked so that git and backup tools leave it alone.

dpverify writes its results store (`.dpverify/results.sqlite`) and the witness files of
`verify` (`.dpverify/witnesses/`) into a folder named `.dpverify`. Whenever dpverify makes
a folder below one of that name (or writes into one), the `.dpverify` folder gets, when it
lacks them, the two markers other tools read:

* `.gitignore` holding `*`: git ignores the folder and everything in it (`git add -A`
  does not commit a results store), as pytest's and ruff's caches do;
* `CACHEDIR.TAG`, whose first line is the signature of the Cache Directory Tagging
  Specification: backup and archiving tools that honour it skip the folder.

A folder of another name (a `--store` elsewhere, a `--witness-dir` of the user's) is left
as it is: the user chose where it goes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

CACHE_DIR_NAME = ".dpverify"
GITIGNORE = "# made by dpverify: a cache of results, not to be committed\n*\n"
# The first 43 bytes are the specification's signature; the rest is a comment.
CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by dpverify.\n")


def make_dirs(directory: str | os.PathLike[str]) -> Path:
    """`directory` made with its parents (as `mkdir -p`), and each `.dpverify` folder on
    its path marked as a cache (`mark_cache`). Raises OSError as `Path.mkdir` does."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    for part in (folder, *folder.parents):
        if part.name == CACHE_DIR_NAME:
            mark_cache(part)
    return folder


def mark_cache(folder: Path) -> None:
    """Write `.gitignore` and `CACHEDIR.TAG` into `folder` where they are missing (an
    existing file is never changed). A folder that cannot be written to is left unmarked:
    the markers are a courtesy to other tools, and the write that follows reports the
    real problem."""
    for name, text in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
        target = folder / name
        if target.exists():
            continue
        with contextlib.suppress(OSError):
            target.write_text(text, encoding="utf-8")
