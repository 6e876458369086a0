"""Multi-level release of a count (Gupte-Sundararajan, PODS 2010, Lemma 3 and Algorithm 1).

For alpha < beta, G_alpha^-1 G_beta is row-stochastic, so results at privacy levels
alpha_1 < alpha_2 < ... are released by successive re-randomisation of one another, and a
coalition of consumers learns no more than its least private member. Pure maths, no I/O;
the geometric mechanism itself is in geometric.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from dpverify.records import record
from dpverify.theory.count.geometric import (
    Number,
    apply_inverse,
    check_alpha,
    exact_matmul,
    geometric_matrix,
    is_exact,
    is_stochastic,
    privacy_level,
)

# --------------------------------------------------------------------------------------
# Multi-level release (GS Lemma 3, Algorithm 1)


def release_matrix(a: Number, b: Number, n: int) -> np.ndarray:
    """T = G_a^-1 G_b, the re-randomisation that turns an a-geometric release into a
    b-geometric one (GS Lemma 3: stochastic when b > a). Needs a < 1 (or n = 0).
    """
    return apply_inverse(geometric_matrix(b, n), a)


def release_chain(alphas: Sequence[Number], n: int) -> list[np.ndarray]:
    """The stage transitions T_j = G_{alpha_j}^-1 G_{alpha_(j+1)} of Algorithm 1."""
    return [release_matrix(a, b, n) for a, b in itertools.pairwise(alphas)]


def sample_chain(first: np.ndarray, transitions: Sequence[np.ndarray], answer: int,
                 rng: np.random.Generator) -> list[int]:
    """Algorithm 1: r_1 ~ G_{alpha_1}[answer, :], then r_(j+1) ~ T_j[r_j, :]."""
    def draw(p) -> int:
        p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
        return int(rng.choice(len(p), p=p / p.sum()))

    out = [draw(first[answer])]
    for T in transitions:
        out.append(draw(T[out[-1]]))
    return out


def stage_marginals(first: np.ndarray, transitions: Sequence[np.ndarray]) -> list[np.ndarray]:
    """G_{alpha_1} T_1 ... T_(j-1) for each stage j (exact for object arrays)."""
    exact = first.dtype == object
    out = [first]
    for T in transitions:
        out.append(exact_matmul(out[-1], T) if exact else out[-1] @ T)
    return out


def subset_joint(first: np.ndarray, transitions: Sequence[np.ndarray],
                 subset: Sequence[int]) -> np.ndarray:
    """The joint release of the stages in `subset` (0-based, increasing), as a matrix with
    one row per true answer and one column per tuple of released answers.

    The released answers form a Markov chain (Algorithm 1): r_1 ~ G_1[i], r_(j+1) ~ T_j[r_j].
    Stages outside the subset are summed out (a product of the transitions between).
    """
    first = np.asarray(first, dtype=np.float64)
    Ts = [np.asarray(T, dtype=np.float64) for T in transitions]
    n1 = first.shape[0]
    subset = sorted(subset)
    lead = first
    for T in Ts[:subset[0]]:
        lead = lead @ T
    joint = lead  # (i, r_s0)
    prev = subset[0]
    for s in subset[1:]:
        step = np.eye(n1)
        for T in Ts[prev:s]:
            step = step @ T
        # joint[i, ..., r_prev] * step[r_prev, r_s]
        joint = joint[..., None] * step.reshape((1,) * (joint.ndim - 1) + step.shape)
        prev = s
    return joint.reshape(n1, -1)


def all_subsets(m: int):
    for size in range(1, m + 1):
        yield from itertools.combinations(range(m), size)


# --------------------------------------------------------------------------------------
# Algorithm 1 end to end: plan, sample, check (exact where it is cheap)

MAX_JOINT_ENTRIES = 8_000_000  # floats held by the largest joint release checked
MIN_LOG10_PROBABILITY = -290.0  # below this a joint probability could underflow


@record(eq=False)
class ReleasePlan:
    """The multi-level release of GS Algorithm 1 for alphas alpha_1 < ... < alpha_m.

    `first` is G_{alpha_1}; `transitions[j]` is T_j = G_{alpha_j}^-1 G_{alpha_(j+1)}
    (exact object arrays when the alphas are Fractions). `stochastic[j]` says whether
    T_j is row-stochastic (exactly, for exact alphas): GS Lemma 3 says it is.
    """

    n: int
    alphas: tuple[Number, ...]
    first: np.ndarray
    transitions: tuple[np.ndarray, ...]
    stochastic: tuple[bool, ...]
    min_entries: tuple[Number, ...]

    @property
    def ok(self) -> bool:
        return all(self.stochastic)


def release_plan(alphas: Sequence[Number], n: int) -> ReleasePlan:
    """Build Algorithm 1's stage matrices. alphas must be strictly increasing in [0, 1]."""
    alphas = tuple(alphas)
    if not alphas:
        raise ValueError("at least one privacy level is needed")
    for a in alphas:
        check_alpha(a)
    if any(b <= a for a, b in itertools.pairwise(alphas)):
        raise ValueError(f"alphas must be strictly increasing: {alphas}")
    exact = all(is_exact(a) for a in alphas)
    first = geometric_matrix(alphas[0], n)
    Ts = tuple(release_chain(alphas, n))
    tol = 0 if exact else 1e-12
    return ReleasePlan(n=n, alphas=alphas, first=first, transitions=Ts,
                       stochastic=tuple(is_stochastic(T, tol) for T in Ts),
                       min_entries=tuple(T.min() for T in Ts))


@record
class SubsetPrivacy:
    """The joint release of `stages` (0-based) is `measured`-DP (the largest such alpha);
    Algorithm 1 promises at least `promised`, the alpha of its least private member."""

    stages: tuple[int, ...]
    promised: float
    measured: float
    tol: float

    @property
    def ok(self) -> bool:
        return self.measured >= self.promised - self.tol


@record
class ReleaseCheck:
    """`marginal_exact[j]`: stage j's marginal G_1 T_1 ... T_(j-1) equals G_{alpha_j}
    (exactly when `exact`, else within 1e-12: `marginal_error[j]` is the largest
    difference); `subsets`: the privacy of every subset's joint release."""

    exact: bool
    marginal_ok: tuple[bool, ...]
    marginal_error: tuple[float, ...]
    subsets: tuple[SubsetPrivacy, ...]

    @property
    def ok(self) -> bool:
        return all(self.marginal_ok) and all(s.ok for s in self.subsets)


def joint_size(n: int, stages: int) -> int:
    """Entries of the full joint release: (n+1)^(stages+1)."""
    return (n + 1) ** (stages + 1)


def _log10_min_positive(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    positive = a[a > 0]
    return float(np.log10(positive.min())) if positive.size else 0.0


def check_release(plan: ReleasePlan, tol: float = 1e-12) -> ReleaseCheck:
    """GS Lemma 3 and section 4.1 checked on the plan: each stage's marginal is the
    alpha_j-geometric mechanism, and every subset of stages is jointly alpha-DP for the
    alpha of its least private (smallest-alpha) member.

    The marginals are compared exactly for exact alphas (a product of rationals). The
    joint releases are computed in floating point from the stage matrices (converted from
    exact ones when available: no cancellation, every entry is a sum of products of
    non-negative numbers, so relative accuracy is kept) and their privacy level is
    compared with a tolerance `tol`. Callers check `joint_size` and `joint_underflows`
    first.
    """
    exact = plan.first.dtype == object
    marginals = stage_marginals(plan.first, plan.transitions)
    ok, err = [], []
    for a, M in zip(plan.alphas, marginals, strict=False):
        target = geometric_matrix(a, plan.n)
        diff = np.abs(np.asarray(M - target, dtype=np.float64))
        if exact:
            ok.append(bool(np.all(target == M)))
        else:
            ok.append(bool(diff.max() <= tol))
        err.append(float(diff.max()))
    first = np.asarray(plan.first, dtype=np.float64)
    Ts = [np.asarray(T, dtype=np.float64) for T in plan.transitions]
    subsets = []
    for subset in all_subsets(len(plan.alphas)):
        joint = subset_joint(first, Ts, subset)
        subsets.append(SubsetPrivacy(stages=tuple(subset),
                                     promised=float(plan.alphas[subset[0]]),
                                     measured=privacy_level(joint), tol=tol))
    return ReleaseCheck(exact=exact, marginal_ok=tuple(ok), marginal_error=tuple(err),
                        subsets=tuple(subsets))


def joint_underflows(plan: ReleasePlan) -> bool:
    """Could a joint release probability underflow a float (so the float check is void)?"""
    total = _log10_min_positive(plan.first) + sum(_log10_min_positive(T)
                                                   for T in plan.transitions)
    return total < MIN_LOG10_PROBABILITY
