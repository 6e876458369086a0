"""dpverify: verify optimality theorems in differential privacy."""

__version__ = "0.1.0"
