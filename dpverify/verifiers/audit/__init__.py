"""Audits of explicit protocols and count mechanisms: the privacy levels achieved, and each
agent's accuracy against the bound.
"""
