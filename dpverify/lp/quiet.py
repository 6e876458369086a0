"""Keeping solvers' own output off the user's stdout (it would corrupt `--json`).

Shared by the backends: HiGHS prints a banner from C++ at its first `Highs()`, and cvxpy's
solver interfaces may print too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_devnull() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null (the banner is written by C++, not by Python)."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 at all: nothing to protect
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            yield
        finally:
            os.dup2(saved, 1)
            os.close(devnull)
    finally:
        os.close(saved)
