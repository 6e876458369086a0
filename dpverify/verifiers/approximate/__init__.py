"""Approximate differential privacy, (epsilon, delta), for multi-party problems on bits
(issue 20; docs/theory.md, "Approximate privacy"): the four-ray bound (bound.py), the best
non-interactive protocol (noninteractive.py), the interactive search (search.py), exact
witnesses (witness.py), and the verdict for one agent and accuracy (verifier.py).
"""
