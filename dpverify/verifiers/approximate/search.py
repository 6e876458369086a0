"""A search over interactive protocols under (epsilon_i, delta_i)-DP (docs/theory.md,
"Approximate privacy"): sequential protocols (theory/approx/sequential.py), each party
speaking once with an M-ary message whose kernel may depend on every earlier message,
improved by alternating exact best responses.

* **A kernel's best response.** With the decision rule and the other kernels fixed, the
  accuracy is linear in one round's kernel K_r, and so are the hockey-stick sums of its
  speaker (one slack per prefix, direction and message) and of every later speaker (their
  prefixes' masses contain K_r once); the earlier speakers' sums do not depend on K_r. So
  the best DP kernel is an LP (average: the mean accuracy; worst: a variable below every
  input's accuracy). Its optimum is at least the current kernel's value, which is feasible.
* **The rule's best response.** KOV 2015, eqs. (2) and (5) (argmax) for the average, the
  LP (W) of eqs. (4) and (6) for the worst case (verifiers/protocol_value.py).

Sweeps over the rounds repeat until a sweep gains less than IMPROVEMENT. Starts: the
product of RR(epsilon_i, delta_i) (first, so that a tie keeps it), then `restarts` starts
seeded by `seed`, alternately RR(epsilon, delta) in a random party order and random DP
kernels (a random lambda-DP kernel mixed with a message-permuted RR(epsilon, delta) kernel:
the hockey-stick sum is convex in the kernel, so weight w spends at most w delta) in a
random order. For the worst case each start is first climbed for the average under the
bound LP's least favourable prior, as in verifiers/multisymbol/search.py.

Everything here is in floats, in normalised gains; the caller makes the best protocol
exact (verifiers/approximate/witness.py) and values it again from its file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpverify.lp.builder import LpBuilder
from dpverify.theory.approx.rr import rr_delta_kernel
from dpverify.theory.approx.sequential import (
    Sequential,
    accuracy_form,
    later_spend_form,
    own_bits,
    prefix_mass,
    spends,
)
from dpverify.theory.protocols.random import random_kernel
from dpverify.theory.protocols.transcripts import Transcripts, relevant_masks
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value

MAX_SWEEPS = 30
IMPROVEMENT = 1e-12
PRIVACY_SLACK = 1e-8  # float excess of a hockey-stick sum a search step may keep (the
# witness is made exactly private afterwards: verifiers/approximate/witness.py)


@dataclass(frozen=True, eq=False)
class ApproxObjective:
    """An agent's accuracy (gains normalised to [0, 1]) under the levels every protocol
    must meet: lambdas (floats, at or below the true levels) and deltas."""

    lambdas: tuple[float, ...]
    deltas: tuple[float, ...]
    gain: np.ndarray
    party: int
    worst: bool


@dataclass(frozen=True, eq=False)
class Found:
    """A protocol, its float value and the start it came from."""

    protocol: Sequential
    value: float
    origin: str


@dataclass(frozen=True, eq=False)
class SearchReport:
    best: Found
    starts: int
    steps: int
    seconds: float


def evaluate(obj: ApproxObjective, seq: Sequential, options: VerifyOptions
             ) -> tuple[float, np.ndarray | None]:
    """The agent's accuracy under its optimal rule, and the rule (rule[a][t][y])."""
    tr = Transcripts(seq.alphabets, (seq.messages,) * seq.parties, seq.matrix(), 1, False)
    value = protocol_value(tr, obj.gain, None, obj.party, obj.worst, options)
    if not value.ok:
        return -np.inf, None
    return value.value, value.rule


def rule_values(obj: ApproxObjective, seq: Sequential, rule: np.ndarray) -> np.ndarray:
    """V(x, t) = sum_y Q[block(x)](t, y) w(f(x), y)."""
    n = obj.gain.shape[0]
    V = np.empty((n, seq.messages ** seq.parties))
    for a, mask in enumerate(relevant_masks(seq.alphabets, obj.party)):
        V[mask] = obj.gain[mask] @ rule[a].T
    return V


def _spend_rows(b: LpBuilder, cols: np.ndarray, coefficients: np.ndarray, bound: float
                ) -> None:
    """Rows coefficients @ x[cols] <= bound (one per row of `coefficients`)."""
    rows = b.add_rows(coefficients.shape[0], -np.inf, bound)
    b.add_matrix(rows, cols, coefficients)


def best_kernel(obj: ApproxObjective, seq: Sequential, r: int, V: np.ndarray,
                options: VerifyOptions) -> np.ndarray | None:
    """Round r's best (epsilon, delta)-DP kernel for the rule values V, the other kernels
    fixed (module docstring); None when the LP does not solve."""
    j, M, k = seq.order[r], seq.messages, seq.parties
    lam, delta = obj.lambdas[j - 1], obj.deltas[j - 1]
    prefixes = M ** r
    C = accuracy_form(seq, r, V)  # (n, prefixes, M)
    n = C.shape[0]
    xj = own_bits(seq, j)
    size = prefixes * 2 * M  # K[p, a, m] at (p * 2 + a) * M + m
    index = np.arange(size).reshape(prefixes, 2, M)
    weights = np.zeros((prefixes, 2, M))
    for a in (0, 1):
        weights[:, a, :] = C[xj == a].sum(axis=0) / n
    b = LpBuilder()
    K = b.add_cols(size, cost=0.0 if obj.worst else weights.ravel())
    sums = b.add_rows(prefixes * 2, 1.0, 1.0)
    b.add(np.repeat(sums, M), K, 1.0)
    other = index[:, ::-1, :].ravel()  # K[p, 1 - a, m]
    if delta > 0:
        s = b.add_cols(size)
        rows = b.add_rows(size, 0.0, np.inf)  # s - K[p, a, m] + lam K[p, b, m] >= 0
        b.add(rows, s, 1.0)
        b.add(rows, K, -1.0)
        b.add(rows, K[other], lam)
        A = prefix_mass(seq, r)[xj == 0]  # (x_-j, prefixes): A does not depend on x_j
        for a in (0, 1):
            cols = s[index[:, a, :].ravel()]
            _spend_rows(b, cols, np.repeat(A, M, axis=1), delta)
    else:
        rows = b.add_rows(size, -np.inf, 0.0)  # K[p, a, m] - lam K[p, b, m] <= 0
        b.add(rows, K, 1.0)
        b.add(rows, K[other], -lam)
    current = spends(seq, obj.lambdas)
    for r2 in range(r + 1, k):
        j2 = seq.order[r2]
        D = later_spend_form(seq, r, r2, obj.lambdas[j2 - 1])  # (n, prefixes, M, 2)
        if not D.any():
            continue
        reps = np.flatnonzero(own_bits(seq, j2) == 0)
        bound = max(obj.deltas[j2 - 1], float(current[j2 - 1]))
        for a2 in (0, 1):
            coefficients = np.zeros((reps.size, size))
            for row, x in enumerate(reps.tolist()):
                coefficients[row, index[:, xj[x], :].ravel()] = D[x, :, :, a2].ravel()
            _spend_rows(b, K, coefficients, bound)
    if obj.worst:
        rows = b.add_rows(n, 0.0, np.inf)
        coefficients = np.zeros((n, size))
        for x in range(n):
            coefficients[x, index[:, xj[x], :].ravel()] = C[x].ravel()
        b.add_matrix(rows, K, coefficients)
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(rows, t, -1.0)
    sol = options.solver().tight(1e-10)(b.build(maximize=True, name="approx-kernel",
                                                drop_tiny=True))
    if not sol.optimal:
        return None
    out = np.clip(sol.x[K].reshape(prefixes, 2, M), 0.0, None)
    return out / out.sum(axis=2, keepdims=True)


def private(obj: ApproxObjective, seq: Sequential) -> bool:
    return bool((spends(seq, obj.lambdas) <= np.array(obj.deltas) + PRIVACY_SLACK).all())


def climb(obj: ApproxObjective, seq: Sequential, origin: str, options: VerifyOptions,
          deadline: float = np.inf) -> tuple[Found, int]:
    """Alternating best responses from `seq` (module docstring); (the best, steps)."""
    value, rule = evaluate(obj, seq, options)
    steps = 0
    for _ in range(MAX_SWEEPS):
        if rule is None or time.perf_counter() > deadline:
            break
        before = value
        for r in range(seq.parties):
            K = best_kernel(obj, seq, r, rule_values(obj, seq, rule), options)
            steps += 1
            if K is None:
                continue
            trial = seq.with_kernel(r, K)
            v, trial_rule = evaluate(obj, trial, options)
            if trial_rule is not None and v > value + IMPROVEMENT and private(obj, trial):
                seq, value, rule = trial, v, trial_rule
        if value <= before + IMPROVEMENT:
            break
    return Found(seq, value, origin), steps


def _repeat(K: np.ndarray, r: int, M: int) -> np.ndarray:
    return np.repeat(np.asarray(K, dtype=np.float64)[None], M ** r, axis=0)


def rr_start(obj: ApproxObjective, order: Sequence[int], M: int) -> Sequential:
    """The product of RR(epsilon_i, delta_i) (messages beyond the fourth unused)."""
    kernels = []
    for r, j in enumerate(order):
        K = np.zeros((2, M))
        K[:, :4] = rr_delta_kernel(obj.lambdas[j - 1], obj.deltas[j - 1])
        kernels.append(_repeat(K, r, M))
    return Sequential(tuple(order), tuple(kernels), M)


def random_start(obj: ApproxObjective, order: Sequence[int], M: int,
                 rng: np.random.Generator) -> Sequential:
    """Random (epsilon, delta)-DP kernels at every prefix (module docstring)."""
    kernels = []
    for r, j in enumerate(order):
        lam, delta = obj.lambdas[j - 1], obj.deltas[j - 1]
        stack = np.empty((M ** r, 2, M))
        for p in range(M ** r):
            E = random_kernel(rng, 2, M, lam)
            D = np.zeros((2, M))
            D[:, rng.permutation(M)[:4]] = rr_delta_kernel(lam, delta)
            w = rng.uniform()
            stack[p] = (1.0 - w) * E + w * D
        kernels.append(stack)
    return Sequential(tuple(order), tuple(kernels), M)


def starts(obj: ApproxObjective, M: int, restarts: int, seed: int
           ) -> list[tuple[Sequential, str]]:
    if M < 4:
        raise ValueError(f"RR(epsilon, delta) needs 4 messages: messages = {M}")
    k = len(obj.lambdas)
    rng = np.random.default_rng(seed)
    out = [(rr_start(obj, range(1, k + 1), M), "rr")]
    for i in range(restarts):
        order = [int(v) + 1 for v in rng.permutation(k)]
        if i % 2 == 0:
            out.append((rr_start(obj, order, M), f"rr-order-{''.join(map(str, order))}"))
        else:
            out.append((random_start(obj, order, M, rng), "random"))
    return out


def search(obj: ApproxObjective, options: VerifyOptions, *, messages: int = 4,
           restarts: int = 8, seed: int = 0, stop_at: float = np.inf,
           prior: np.ndarray | None = None, seconds: float = np.inf) -> SearchReport:
    """The best protocol from every start (module docstring); stops once a protocol
    reaches `stop_at` (the bound: nothing does better) or after `seconds`."""
    start = time.perf_counter()
    deadline = start + seconds
    bayes = None
    if obj.worst and prior is not None and np.isfinite(prior).all() and prior.sum() > 0:
        weights = np.clip(prior, 0.0, None) / np.clip(prior, 0.0, None).sum()
        bayes = ApproxObjective(obj.lambdas, obj.deltas,
                                obj.gain * (weights * len(weights))[:, None], obj.party,
                                worst=False)
    best: Found | None = None
    steps = 0
    tried = starts(obj, messages, restarts, seed)
    if bayes is not None:  # each non-random start also climbed for the prior first
        tried += [(climb(bayes, seq, origin, options, deadline)[0].protocol, f"{origin}+prior")
                  for seq, origin in tried if origin != "random"]
    for seq, origin in tried:
        if best is not None and time.perf_counter() > deadline:
            break
        found, used = climb(obj, seq, origin, options, deadline)
        steps += used
        if best is None or found.value > best.value + IMPROVEMENT:
            best = found
        if best.value >= stop_at:
            break
    assert best is not None
    return SearchReport(best, len(tried), steps, time.perf_counter() - start)

