"""How to install an extra (`plot`, `dask`), said the way that works where dpverify runs.

In a checkout of the repository (the package's folder sits beside the project's
`pyproject.toml`: `make run` installed it editable into `.venv`) the hint is the
checkout's own, `.venv/bin/pip install -e '.[plot]'`; anywhere else (a wheel, an sdist
installed into some environment) it is `pip install 'dpverify[plot]'`.
"""

from __future__ import annotations

import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@functools.cache
def in_checkout(package: Path = PACKAGE) -> bool:
    """Whether `package` is the `dpverify/` folder of a checkout: beside it, the project's
    pyproject.toml names the project dpverify."""
    pyproject = package.parent / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return package.name == "dpverify" and 'name = "dpverify"' in text


def install_hint(extra: str, *, checkout: bool | None = None) -> str:
    """The command that installs the extra `extra` (`plot`, `dask`) here."""
    if in_checkout() if checkout is None else checkout:
        return f".venv/bin/pip install -e '.[{extra}]'"
    return f"pip install 'dpverify[{extra}]'"
