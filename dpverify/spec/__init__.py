"""Problem files: TOML -> frozen dataclasses; named functions; safe expressions; validation.

Each name below is imported when first used (as in dpverify/__init__.py), so that a module
that needs one part of spec/ loads only that part: the independent checker
(dpverify/checker/) reads the models and the tabulation, never a file kind's parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpverify.spec.count_model import CountSpec
    from dpverify.spec.loader import Spec, load, loads
    from dpverify.spec.model import MultipartySpec
    from dpverify.spec.protocol_model import ProtocolSpec

__all__ = ["CountSpec", "MultipartySpec", "ProtocolSpec", "Spec", "load", "loads"]

HOMES = {"CountSpec": "count_model", "MultipartySpec": "model", "ProtocolSpec": "protocol_model",
         "Spec": "loader", "load": "loader", "loads": "loader"}


def __getattr__(name: str) -> Any:
    if name not in HOMES:
        raise AttributeError(f"module 'dpverify.spec' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dpverify.spec.{HOMES[name]}"), name)
    globals()[name] = value
    return value
