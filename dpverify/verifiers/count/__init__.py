"""Count queries (Gupte, Sundararajan 2010): the minimax and Bayes LPs, the geometric
mechanism with its best post-processing, and the multi-level release.
"""
