"""Sweeps: one problem verified over a range of privacy levels and/or numbers of parties,
each point a full verification run in parallel like a batch, with flat rows for CSV, JSON
and plots (`dpverify sweep`, `dpverify.sweep`)."""

from dpverify.sweeps.axes import Axis, Variable, parse_levels, parse_parties
from dpverify.sweeps.run import Sweep, SweepPoint, run_sweep

__all__ = ["Axis", "Sweep", "SweepPoint", "Variable", "parse_levels", "parse_parties",
           "run_sweep"]
