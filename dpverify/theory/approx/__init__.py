"""Approximate differential privacy, (epsilon, delta), for multi-party computation on bits
(issue 20; docs/theory.md, "Approximate privacy"). Pure mathematics: no solver, no I/O.

* `rr`: the four-output randomized response RR(epsilon, delta) (Kairouz, Oh, Viswanath,
  *The composition theorem for differential privacy*, ICML 2015, Theorem 2.4's mechanism),
  its product over k parties, the four rays of a factor and the split of a factor on them.
* `hockey`: the hockey-stick divergence (KOV 2015, eq. (12)) of an explicit protocol, the
  achieved delta at a claimed epsilon (exact, or an exact bracket when e^epsilon is
  irrational), the privacy profile delta(epsilon).
* `rays`: the products of rays and the hockey-stick rows, the data of the four-ray LP and
  of the envelope LP.
* `certificate`: the four-ray LP's dual made an exact bound (every dual inequality checked
  in rationals), and the exact Kronecker transforms on products of rays.
* `envelope`: the envelope LP's chords and its dual made an exact bound: the best accuracy
  of any interactive (epsilon_i, delta_i)-DP protocol (docs/theory.md 7.10).
* `grid`: grid protocols, whose every message keeps each party's factor on a ray: the
  witnesses of the envelope bound (docs/theory.md 7.11).
* `format`: the certificates' data types and JSON forms.
"""
