"""Two packages are also functions of the Python API: `dpverify.verify(problem)` and
`dpverify.batch(paths)`.

`dpverify.verify` and `dpverify.batch` name sub-packages, and the API wants functions of
the same names. Python binds a sub-package to its parent's attribute when the sub-package
is first imported, so a plain function there would be replaced by the module as soon as
anything imported `dpverify.verify.run`. Instead these two packages are made callable:
calling one calls the API function of the same name (`dpverify.api.verify`,
`dpverify.api.batch`), and `import dpverify.verify.paths` works as before. Type checkers
see the functions (dpverify/__init__.py imports them under TYPE_CHECKING).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from typing import Any


class CallableModule(types.ModuleType):
    """A package whose call is the API function named like its last component."""

    def _function(self) -> Any:
        api = importlib.import_module("dpverify.api")
        return getattr(api, self.__name__.rpartition(".")[2])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:  # help() and notebooks show the API's
        return inspect.signature(self._function())


def make_callable(name: str) -> None:
    """Make the (already imported) package `name` callable."""
    sys.modules[name].__class__ = CallableModule
