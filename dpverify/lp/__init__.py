"""Linear programs as plain arrays, and the solver backends that take them."""

from dpverify.lp.model import LinearProgram, LpSolution, LpStatus
from dpverify.lp.solve import BACKENDS, solve

__all__ = ["BACKENDS", "LinearProgram", "LpSolution", "LpStatus", "solve"]
