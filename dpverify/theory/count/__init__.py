"""Count queries: the geometric mechanism, derivability, the DP-chain bound, exact gap
witnesses, and the multi-level release (Gupte, Sundararajan 2010).
"""
