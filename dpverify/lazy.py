"""Names a package imports when first used (PEP 562): its `__getattr__`, built from a
table of each name's home module, so that importing the package loads none of them
(issue 19 and 25: start-up)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: a name of `homes` is imported from
    `package.<its home>` when first asked for and kept in the package's namespace; any
    other name is an AttributeError, as for a plain module."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
