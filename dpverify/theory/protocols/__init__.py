"""Explicit protocols: transcripts and P(t | x), exact privacy levels from the prefix tree,
the worst-case LP on transcripts, random DP protocols.
"""
