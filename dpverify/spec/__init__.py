"""Problem files: TOML -> frozen dataclasses; named functions; safe expressions; validation."""

from dpverify.spec.loader import load, loads

__all__ = ["load", "loads"]
