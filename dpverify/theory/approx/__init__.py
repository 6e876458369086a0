"""Approximate differential privacy, (epsilon, delta), for multi-party computation on bits
(issue 20; docs/theory.md, "Approximate privacy"). Pure mathematics: no solver, no I/O.

* `rr`: the four-output randomized response RR(epsilon, delta) (Kairouz, Oh, Viswanath,
  *The composition theorem for differential privacy*, ICML 2015, Theorem 2.4's mechanism),
  its product over k parties, the four rays of a factor and the split of a factor on them.
* `hockey`: the hockey-stick divergence (KOV 2015, eq. (12)) of an explicit protocol, the
  achieved delta at a claimed epsilon (exact, or an exact bracket when e^epsilon is
  irrational), the privacy profile delta(epsilon).
* `rays`: the data of the four-ray rank-one LP, an upper bound over every interactive
  (epsilon_i, delta_i)-DP protocol.
* `certificate`: that LP's dual made an exact bound (every dual inequality checked in
  rationals).
* `sequential`: protocols in which every party speaks once, in some order, and the linear
  forms of one party's exact best response.
"""
