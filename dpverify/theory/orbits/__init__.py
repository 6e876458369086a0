"""Symmetry: orbit spaces, the classes' generating polynomials, orbit certificates, RR's
worst-case LP on orbits.
"""
