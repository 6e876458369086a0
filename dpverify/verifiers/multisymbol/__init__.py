"""Inputs with more than two symbols (research mode): the ray-product bound, the protocol
search, witness protocol files and m-ary certificates.
"""
