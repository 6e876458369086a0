"""Multi-party problems on bits (Kairouz, Oh, Viswanath 2015): one planner (planner.py) over
the reductions (reductions.py: the gains' units, the symmetry) and three routes (routes.py):
`proof`, RR's exact certificate on all inputs (all_inputs.py); `orbit`, the exact
certificate on orbits (orbit.py, orbit_worst.py); `lp`, the corner LP against RR's
decision LPs (corner_lp.py, lps.py), settled exactly when its floats cannot decide
(settle.py); the hints one route hands to the next (hints.py).
"""
