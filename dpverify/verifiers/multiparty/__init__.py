"""Multi-party problems on bits (Kairouz, Oh, Viswanath 2015): the methods `lp` (the corner
LP), `orbit` (symmetry) and `proof` (the exact certificate), the choice between them,
exact settling and certificates.
"""
