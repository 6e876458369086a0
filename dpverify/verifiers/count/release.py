"""Release a count at several privacy levels at once: the library behind `dpverify release`.

Gupte-Sundararajan (PODS 2010), Lemma 3 and Algorithm 1: stage 1 releases the
alpha_1-geometric mechanism's output, and stage j+1 re-randomises stage j's release with
T_j = G_{alpha_j}^-1 G_{alpha_(j+1)}, which is row-stochastic because alpha_(j+1) > alpha_j.
The stage matrices are built in exact rational arithmetic (dpverify.theory.count.geometric);
this module validates the request, samples the release and runs the optional check.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpverify.errors import InputError, SizeLimitError
from dpverify.notebook import Notebook
from dpverify.policy import MAX_RELEASE_N  # the stage matrices are built exactly
from dpverify.records import record
from dpverify.spec.numbers import NumberError, parse_exact, rational_text
from dpverify.theory.count.release import (
    MAX_JOINT_ENTRIES,
    ReleaseCheck,
    ReleasePlan,
    check_release,
    joint_size,
    joint_underflows,
    release_plan,
    sample_chain,
)

__all__ = ["MAX_RELEASE_N", "Release", "multilevel_release", "parse_alphas"]



@record(repr=False)
class Release(Notebook):
    """One multi-level release: the plan (stage matrices), the released answers (one per
    stage), the true answer, the seed that drew them, and the check when one was asked."""

    plan: ReleasePlan
    released: tuple[int, ...]
    answer: int
    seed: int
    check: ReleaseCheck | None = None

    notebook_columns = ("stage", "alpha", "released", "transition_stochastic")

    @property
    def ok(self) -> bool:
        """Every T_j is stochastic and, when checked, every check passed."""
        return bool(self.plan.ok and (self.check is None or self.check.ok))

    def notebook_title(self) -> str:
        return (f"Release n = {self.plan.n}, answer {self.answer}, seed {self.seed}: "
                f"{'ok' if self.ok else 'FAILED'}")

    def to_dict(self) -> dict[str, Any]:
        """The release in brief: n, the true answer, the seed, whether it is sound (`ok`),
        and per stage its alpha ("p/q" when exact), the answer released and whether its
        transition from the stage before is stochastic."""
        def level(a: Any) -> Any:
            return rational_text(a) if isinstance(a, Fraction) else float(a)

        stages = [{"stage": j + 1, "alpha": level(a), "released": self.released[j],
                   "transition_stochastic": None if j == 0 else self.plan.stochastic[j - 1]}
                  for j, a in enumerate(self.plan.alphas)]
        return {"n": self.plan.n, "answer": self.answer, "seed": self.seed, "ok": self.ok,
                "stages": stages}


def parse_alphas(text: str) -> list[Fraction]:
    """Comma-separated privacy levels alpha = e^-epsilon in [0, 1], strictly increasing
    (exact rationals "p/q" allowed); InputError (exit 2) naming the bad item otherwise."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        try:
            a = parse_exact(item)
        except NumberError as exc:
            raise InputError(f"--alphas: {item!r}: {exc}") from None
        if not 0 <= a <= 1:
            raise InputError(f"--alphas: {item!r}: every alpha = e^-epsilon must lie in [0, 1]")
        out.append(a)
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise InputError(f"--alphas: {text!r}: list the privacy levels in strictly increasing "
                         "order (least private first: each stage re-randomises the previous "
                         "one, Gupte-Sundararajan Lemma 3)")
    return out


def _validate(n: int, alphas: Sequence[Fraction], answer: int, seed: int | None,
              check: bool) -> None:
    if not 0 <= n <= MAX_RELEASE_N:
        raise InputError(f"--n: {n}: must be an integer in 0..{MAX_RELEASE_N} (the stage "
                         "matrices are built in exact arithmetic)")
    if not 0 <= answer <= n:
        raise InputError(f"--answer: {answer}: must be an answer in 0..{n} (--n {n})")
    if seed is not None and seed < 0:
        raise InputError(f"--seed: {seed}: must be >= 0")
    if check and joint_size(n, len(alphas)) > MAX_JOINT_ENTRIES:
        raise SizeLimitError(
            f"--check: the joint release of {len(alphas)} stages over n = {n} has "
            f"(n+1)^{len(alphas) + 1} = {joint_size(n, len(alphas)):.3g} entries; the limit "
            f"is {MAX_JOINT_ENTRIES:,} (fewer stages or a smaller n)")


def multilevel_release(n: int, alphas: Sequence[Fraction], answer: int, *,
                       seed: int | None = None, check: bool = False) -> Release:
    """Release `answer` in 0..n at the privacy levels `alphas` (strictly increasing in
    [0, 1]; see `parse_alphas`), drawing with `seed` (a fresh one when None).

    With `check`, verify exactly that stage j's marginal is the alpha_j-geometric
    mechanism, and to 1e-12 that every subset of stages is jointly as private as its least
    private member. Raises InputError for bad input and SizeLimitError when the check would
    be too large or would underflow in floating point.
    """
    _validate(n, alphas, answer, seed, check)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    plan = release_plan(list(alphas), n)
    result = None
    if check:
        if joint_underflows(plan):
            raise SizeLimitError("--check: the joint release probabilities would underflow "
                                 "in floating point (alphas too close to 0 for this n)")
        result = check_release(plan)
    first = np.asarray(plan.first, dtype=np.float64)
    transitions = [np.asarray(T, dtype=np.float64) for T in plan.transitions]
    released = sample_chain(first, transitions, answer, np.random.default_rng(seed))
    return Release(plan, tuple(released), answer, seed, result)
