"""Approximate differential privacy, (epsilon, delta), for multi-party problems on bits
(issues 20 and 27; docs/theory.md, "Approximate privacy"): the envelope bound, the best
accuracy of any interactive protocol (envelope.py), the best non-interactive protocol
(noninteractive.py), the search for protocols that reach the bound (search.py: the
envelope's flow played as a protocol, flow.py; one LP per schedule of speakers,
schedule.py), exact witnesses (witness.py), certificates (certify.py), and the verdict for
one agent and accuracy (verifier.py).
"""
