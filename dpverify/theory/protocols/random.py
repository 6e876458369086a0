"""Random interactive protocols inside the DP set, and local moves that stay inside it, for
the falsification search (`dpverify falsify`; docs/theory.md, "Falsifying the bound").

A round's kernel is lambda_r-DP for its speaker when every message's column u (one entry
per input symbol) has max(u) <= lambda_r min(u). Along a transcript the ratios of a party's
rounds multiply (theory/protocols/transcripts.py, eq. (1)), so a party whose level is lambda_i and
whose
budget is split as epsilon_i = sum_r epsilon_r over the rounds it speaks in meets lambda_i
on every transcript, however the kernels depend on the earlier messages. Every move below
keeps each round within its own budget:

* a mixture of two lambda_r-DP kernels is lambda_r-DP (column by column, the ratio of two
  sums is at most the larger of the two ratios);
* mixing with the uniform kernel lowers every column's ratio, so a random stochastic
  kernel is brought inside the budget by the least such mixing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpverify.records import record
from dpverify.theory.protocols.transcripts import Transcripts, propagate, rr_kernel

# Budgets are drawn a factor (1 - MARGIN) inside the levels, so that float rounding in the
# products of ratios can never push a random protocol past its level.
MARGIN = 1e-12


@record(eq=False)
class FloatProtocol:
    """A protocol in floats: in round r party `speakers[r]` speaks with kernels[r][p] (rows:
    its input symbols, columns: messages) after prefix p (mixed radix, first message most
    significant); `budgets[r]` is the round's level lambda_r."""

    alphabets: tuple[int, ...]
    speakers: tuple[int, ...]
    kernels: tuple[np.ndarray, ...]  # kernels[r]: (prefixes of round r, symbols, messages)
    budgets: tuple[float, ...]
    origin: str = "random"  # "rr", "random", or "climb"

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(K.shape[2]) for K in self.kernels)

    def transcripts(self) -> Transcripts:
        P = propagate(self.alphabets, self.speakers, list(self.kernels))
        return Transcripts(self.alphabets, self.sizes, P, 1, False)

    def levels(self) -> tuple[float, ...]:
        """The composed level of each party: the product of its rounds' budgets."""
        out = [1.0] * len(self.alphabets)
        for speaker, lam in zip(self.speakers, self.budgets, strict=True):
            out[speaker - 1] *= lam
        return tuple(out)


def within_budget(kernel: np.ndarray, lam: float) -> np.ndarray:
    """The least mixture (1 - t) K + t U with the uniform kernel U whose every column has
    max <= lam * min: t = max over columns of d / (d + (lam - 1) / M), d = max - lam min."""
    M = kernel.shape[1]
    d = kernel.max(axis=0) - lam * kernel.min(axis=0)
    if not (d > 0).any():
        return kernel
    if lam <= 1.0:
        return np.full_like(kernel, 1.0 / M)
    t = float(np.max(np.where(d > 0, d / (d + (lam - 1.0) / M), 0.0)))
    return (1.0 - t) * kernel + t / M


def random_kernel(rng: np.random.Generator, symbols: int, messages: int,
                  lam: float) -> np.ndarray:
    """A random lam-DP kernel: Dirichlet rows (sparse ones too), brought inside the budget."""
    concentration = rng.choice([0.3, 1.0, 3.0])
    K = rng.dirichlet(np.full(messages, concentration), size=symbols)
    return within_budget(K, lam)


def extreme_kernel(rng: np.random.Generator, symbols: int, messages: int,
                   lam: float) -> np.ndarray:
    """A lam-DP kernel on the boundary: for bits, randomized response with its two
    messages split at random (every column on an extreme ray of the DP cone, KOV 2015);
    otherwise the sharpest kernel within budget of a random deterministic map."""
    if symbols == 2 and messages >= 2:
        ones = rng.permutation(messages) < rng.integers(1, messages)
        w = np.zeros(messages)
        w[ones] = rng.dirichlet(np.ones(int(ones.sum())))
        w[~ones] = rng.dirichlet(np.ones(int((~ones).sum())))
        high, low = lam / (1.0 + lam), 1.0 / (1.0 + lam)
        return np.vstack([w * np.where(ones, high, low), w * np.where(ones, low, high)])
    K = np.zeros((symbols, messages))
    K[np.arange(symbols), rng.integers(0, messages, size=symbols)] = 1.0
    return within_budget(K, lam)


def _split(rng: np.random.Generator, speakers: Sequence[int], lambdas: Sequence[float]
           ) -> list[float]:
    """Each party's epsilon split over the rounds it speaks in, at random (Dirichlet)."""
    budgets = [1.0] * len(speakers)
    for party in set(speakers):
        rounds = [r for r, s in enumerate(speakers) if s == party]
        eps = math.log(lambdas[party - 1]) * (1.0 - MARGIN)
        for r, w in zip(rounds, rng.dirichlet(np.ones(len(rounds))), strict=True):
            budgets[r] = math.exp(eps * float(w))
    return budgets


def random_protocol(rng: np.random.Generator, lambdas: Sequence[float], rounds: int,
                    messages: int, alphabets: Sequence[int] | None = None) -> FloatProtocol:
    """1..rounds rounds (uniform), random speakers, each party's budget split over its
    rounds, and for every prefix of every round an independent random kernel (adaptive)."""
    alphabets = tuple(alphabets or (2,) * len(lambdas))
    count = int(rng.integers(1, rounds + 1))
    speakers = [int(s) for s in rng.integers(1, len(lambdas) + 1, size=count)]
    budgets = _split(rng, speakers, lambdas)
    kernels = []
    prefixes = 1
    for speaker, lam in zip(speakers, budgets, strict=True):
        m = alphabets[speaker - 1]
        draw = extreme_kernel if rng.random() < 0.5 else random_kernel
        kernels.append(np.stack([draw(rng, m, messages, lam) for _ in range(prefixes)]))
        prefixes *= messages
    return FloatProtocol(alphabets, tuple(speakers), tuple(kernels), tuple(budgets))


def rr_protocol(lambdas: Sequence[float]) -> FloatProtocol:
    """Randomized response as a protocol: party i speaks in round i with its RR channel."""
    kernels = []
    for i, lam in enumerate(lambdas):
        K = np.array(rr_kernel(float(lam)), dtype=np.float64)
        kernels.append(np.repeat(K[None], 1 << i, axis=0))
    k = len(lambdas)
    return FloatProtocol((2,) * k, tuple(range(1, k + 1)), tuple(kernels),
                         tuple(float(v) for v in lambdas), origin="rr")


def perturb(rng: np.random.Generator, protocol: FloatProtocol, step: float) -> FloatProtocol:
    """A random move inside the DP set: one round's kernel at one prefix (or at all of
    them) mixed with a random or an extreme kernel of the same budget, by up to `step`."""
    kernels = [K.copy() for K in protocol.kernels]
    r = int(rng.integers(len(kernels)))
    K = kernels[r]
    m, M = K.shape[1], K.shape[2]
    lam = protocol.budgets[r]
    where = range(K.shape[0]) if rng.random() < 0.3 else [int(rng.integers(K.shape[0]))]
    s = float(rng.uniform(0.0, step))
    for p in where:
        draw = extreme_kernel if rng.random() < 0.5 else random_kernel
        K[p] = (1.0 - s) * K[p] + s * draw(rng, m, M, lam)
    return FloatProtocol(protocol.alphabets, protocol.speakers, tuple(kernels),
                         protocol.budgets, origin="climb")
