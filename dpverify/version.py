"""The version of dpverify (pyproject.toml's), in a module of its own that imports nothing,
so that any layer may read it."""

__version__ = "0.1.0"
