"""Problem files: TOML -> frozen dataclasses; named functions; safe expressions; validation."""

from dpverify.spec.count_model import CountSpec
from dpverify.spec.loader import Spec, load, loads
from dpverify.spec.model import MultipartySpec
from dpverify.spec.protocol_model import ProtocolSpec

__all__ = ["CountSpec", "MultipartySpec", "ProtocolSpec", "Spec", "load", "loads"]
