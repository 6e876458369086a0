"""More than two symbols: the DP cone's extreme rays, non-interactive protocols, m-ary
certificates.
"""
