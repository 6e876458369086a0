"""The best non-interactive protocol it can find, for inputs with more than two symbols
(docs/theory.md, section 6.4): alternating maximisation over the parties' DP channels.

From a start (one DP channel per party), repeat until a sweep gains nothing: compute the
agent's optimal decision rule on the product protocol (verifiers/protocol_value.py: KOV 2015
eqs. (2) and (5) by argmax, (4) and (6) by an LP), then for each party in turn replace its
channel by the best DP channel for the rule and the other channels fixed, an LP over the
channel (theory/symbols/noninteractive.py: the accuracy is linear in one channel). Each step can
only raise the value, so the search ends at a protocol at least as good as its start.

Starts: m-ary randomized response, binary mechanisms (staircase mechanisms whose outputs
are rays; KOV 2014), the support of the ray-product LP's solution (for one party, its
merged columns, which reach the LP's optimum), and random DP channels (`--restarts`,
seeded by `--seed`). Values are floats in normalised gains; the caller turns the best
protocol into an exact witness and values it again from its file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpverify import clock
from dpverify.defaults import Backend
from dpverify.lp.builder import LpBuilder
from dpverify.records import record
from dpverify.theory.exact_rows import clean_distribution, clean_stochastic
from dpverify.theory.protocols.transcripts import Transcripts, relevant_masks
from dpverify.theory.symbols.noninteractive import (
    binary_channels,
    coefficients,
    merged_channel,
    merged_outputs,
    product_protocol,
    random_channels,
    rr_channels,
    support_weights,
)
from dpverify.theory.symbols.rays import ray_matrix, rr_symbols
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.solving import Solver

MAX_SWEEPS = 60
IMPROVEMENT = 1e-12  # a sweep must gain more than this to continue
BINARY_STARTS = 16  # combinations of binary mechanisms tried at most
MAX_RESPONSE_LABELS = 512  # labels of an exact best response (else: the rule stays fixed)


@record(eq=False)
class Candidate:
    """A non-interactive protocol, its value (normalised, float) and where it came from."""

    channels: tuple[np.ndarray, ...]
    value: float
    origin: str


@record(eq=False)
class Objective:
    """What is maximised: an agent's accuracy (gains normalised to [0, 1])."""

    alphabets: tuple[int, ...]
    lambdas: tuple[float, ...]  # the levels every channel must meet
    gain: np.ndarray  # (n, |Y|)
    party: int  # 0: the observer
    worst: bool


def evaluate(objective: Objective, channels: Sequence[np.ndarray], options: VerifyOptions
             ) -> tuple[float, np.ndarray | None]:
    """The agent's accuracy on the product protocol under its optimal rule, and the rule
    (rule[a][o][y], one block per own symbol, one for the observer); -inf on failure."""
    P = product_protocol(channels)
    tr = Transcripts(objective.alphabets, tuple(C.shape[1] for C in channels), P, 1, False)
    value = protocol_value(tr, objective.gain, None, objective.party, objective.worst, options)
    if not value.ok:
        return -np.inf, None
    return value.value, value.rule


def _rule_values(objective: Objective, rule: np.ndarray, T: int) -> np.ndarray:
    """values[x, o] = sum_y Q[block(x)][o, y] w(f(x), y)."""
    n = objective.gain.shape[0]
    out = np.empty((n, T))
    for a, mask in enumerate(relevant_masks(objective.alphabets, objective.party)):
        out[mask] = objective.gain[mask] @ rule[a].T
    return out


def best_channel(objective: Objective, channels: Sequence[np.ndarray], rule: np.ndarray,
                 party: int, options: VerifyOptions) -> np.ndarray | None:
    """Party `party` (0-based)'s best DP channel for the other channels: with the rule too
    when the labels allow (response_coefficients), else for the rule fixed."""
    A = response_coefficients(objective, channels, party)
    if A is None:
        T = int(np.prod([C.shape[1] for C in channels]))
        A = coefficients(channels, _rule_values(objective, rule, T), party,
                         objective.alphabets)
    return channel_lp(objective, A, party, options)


def response_coefficients(objective: Objective, channels: Sequence[np.ndarray], party: int
                          ) -> np.ndarray | None:
    """A[x, l] for party i's exact best response (rule included): a label l maps what the
    agent sees besides o_i (the outputs o' of the other parties, and its own symbol for a
    party agent, whose own output then adds nothing: given x_p it is independent noise) to
    a decision. With o_i merged by label (KOV's merging of transcripts), the accuracy at x
    is sum_l C_i[x_i, l] A[x, l], A[x, l] = sum_o' P'[x, o'] w(f(x), l(o')), P' the other
    parties' product protocol. None when there are too many labels, or for the agent's
    own channel (which it does not need)."""
    alphabets = objective.alphabets
    agent = objective.party - 1  # -1: the observer
    if agent == party:
        return None
    seen = [j for j in range(len(alphabets)) if j not in (party, agent)]
    outputs = int(np.prod([channels[j].shape[1] for j in seen]))
    contexts = outputs * (alphabets[agent] if agent >= 0 else 1)
    width = objective.gain.shape[1]
    if width ** contexts > MAX_RESPONSE_LABELS:
        return None
    symbols = np.indices(alphabets).reshape(len(alphabets), -1)
    row = (np.ravel_multi_index(tuple(symbols[j] for j in seen),
                                tuple(alphabets[j] for j in seen)) if seen
           else np.zeros(symbols.shape[1], dtype=np.int64))
    P = product_protocol([channels[j] for j in seen])[row]  # (n, O')
    labels = np.indices((width,) * contexts).reshape(contexts, -1).T  # (L, contexts)
    offset = symbols[agent] * outputs if agent >= 0 else np.zeros_like(row)
    A = np.zeros((P.shape[0], labels.shape[0]))
    for o in range(outputs):
        choice = labels[:, offset + o].T  # (n, L): the decision at context (x_p, o)
        A += P[:, o:o + 1] * np.take_along_axis(objective.gain, choice, axis=1)
    return A


def channel_lp(objective: Objective, A: np.ndarray, party: int, options: VerifyOptions
               ) -> np.ndarray | None:
    """The best DP channel C (rows distributions, C[a, o] <= lambda C[b, o]) for the
    linear accuracies acc[x] = sum_o A[x, o] C[x_i, o]: average, their mean; worst, their
    minimum (a variable t below every one)."""
    m, M = objective.alphabets[party], A.shape[1]
    own = np.indices(objective.alphabets).reshape(len(objective.alphabets), -1)[party]
    lam = objective.lambdas[party]
    b = LpBuilder()
    weights = np.zeros((m, M))
    np.add.at(weights, own, A)
    cols = b.add_cols(m * M, cost=0.0 if objective.worst else weights.ravel() / A.shape[0])
    sums = b.add_rows(m, 1.0, 1.0)
    b.add(np.repeat(sums, M), cols, 1.0)
    for a in range(m):
        for c in range(m):
            if a != c:  # C[a, o] - lambda C[c, o] <= 0
                rows = b.add_rows(M, -np.inf, 0.0)
                b.add(rows, cols[a * M:(a + 1) * M], 1.0)
                b.add(rows, cols[c * M:(c + 1) * M], -lam)
    if objective.worst:  # sum_o A[x, o] C[x_i, o] - t >= 0 for every input x
        rows = b.add_rows(A.shape[0], 0.0, np.inf)
        b.add(np.repeat(rows, M), cols[(own[:, None] * M + np.arange(M)[None, :]).ravel()],
              A.ravel())
        t = b.add_cols(1, cost=1.0, lo=-np.inf)
        b.add(rows, t, -1.0)
    sol = options.solver().tight(1e-10)(b.build(maximize=True, name="channel"))
    if not sol.optimal:
        return None
    return clean_stochastic(merged_outputs(clean_stochastic(sol.x[cols].reshape(m, M))))


def climb(objective: Objective, start: Sequence[np.ndarray], origin: str,
          options: VerifyOptions) -> Candidate:
    """Alternating maximisation from `start` (module docstring)."""
    channels = [np.asarray(C, dtype=float) for C in start]
    value, rule = evaluate(objective, channels, options)
    best = Candidate(tuple(channels), value, origin)
    for _ in range(MAX_SWEEPS):
        if rule is None:
            break
        before = best.value
        for i in range(len(channels)):
            C = best_channel(objective, channels, rule, i, options)
            if C is None:
                continue
            trial = channels[:i] + [C] + channels[i + 1:]
            v, r = evaluate(objective, trial, options)
            if r is not None and v > best.value + IMPROVEMENT:
                channels, rule = trial, r
                best = Candidate(tuple(channels), v, origin)
        if best.value <= before + IMPROVEMENT:
            break
    return best


def staircase_channel(rays: np.ndarray, weights: np.ndarray, solve: Solver) -> np.ndarray | None:
    """A staircase channel (KOV 2014) whose outputs are rays: columns c_r ray_r, c >= 0,
    with every row summing to 1 (R c = 1), putting as much as it can on the rays of large
    `weights` (an LP, solved by `solve` on HiGHS); None when no such c exists."""
    b = LpBuilder()
    c = b.add_cols(rays.shape[1], cost=weights)
    rows = b.add_rows(rays.shape[0], 1.0, 1.0)
    b.add_matrix(rows, c, rays)
    sol = solve.on(Backend.HIGHS)(b.build(maximize=True, name="staircase"))
    if not sol.optimal:
        return None
    return merged_outputs(rays * np.clip(sol.x, 0.0, None)[None, :])


def support_channels(objective: Objective, theta: np.ndarray,
                     solve: Solver) -> list[np.ndarray] | None:
    """A staircase channel per party on the rays the ray-product LP's solution uses, with
    RR's rays available too (at a cost) so that one always exists."""
    out = []
    weights = support_weights(objective.alphabets, theta)
    for m, lam, w in zip(objective.alphabets, objective.lambdas, weights, strict=True):
        rays = np.hstack([ray_matrix(m, lam), rr_symbols(m, lam)])
        score = np.concatenate([np.where(w > 1e-9, 1.0, -1.0), np.full(m, -0.5)])
        C = staircase_channel(rays, score, solve)
        if C is None:
            return None
        out.append(clean_stochastic(C))
    return out


def starts(objective: Objective, theta: np.ndarray | None, restarts: int, seed: int,
           solve: Solver) -> list[tuple[list[np.ndarray], str]]:
    """The starting protocols of the module docstring, in order (`solve`: the run's
    solver, for the LP of the support start)."""
    alphabets, lambdas = objective.alphabets, objective.lambdas
    rng = np.random.default_rng(seed)
    out: list[tuple[list[np.ndarray], str]] = [(rr_channels(alphabets, lambdas), "rr")]
    if theta is not None:
        if len(alphabets) == 1:
            out.append(([merged_channel(alphabets[0], lambdas[0], theta)], "support"))
        else:
            support = support_channels(objective, theta, solve)
            if support is not None:
                out.append((support, "support"))
    out += [(c, "binary") for c in binary_channels(alphabets, lambdas, rng, BINARY_STARTS)]
    out += [(random_channels(alphabets, lambdas, rng), "random") for _ in range(restarts)]
    return out


def search(objective: Objective, theta: np.ndarray | None, restarts: int, seed: int,
           options: VerifyOptions, stop_at: float = np.inf,
           prior: np.ndarray | None = None) -> Candidate:
    """The best protocol from every start (RR first: a tie keeps it); stops early once a
    protocol reaches `stop_at` (the upper bound: nothing can do better). For the worst
    case, each start is first climbed for the average under `prior` (the ray-product LP's
    least favourable prior): at a saddle point the maximin protocol is a best response to
    it, and the worst case alone is flat wherever several inputs are worst at once."""
    best: Candidate | None = None
    bayes = None
    if objective.worst and prior is not None and np.isfinite(prior).all() and prior.sum() > 0:
        weights = clean_distribution(prior)
        bayes = Objective(objective.alphabets, objective.lambdas,
                          objective.gain * (weights * len(weights))[:, None], objective.party,
                          worst=False)
    tried = starts(objective, theta, restarts, seed, options.solver())
    if bayes is not None:
        tried += [(list(climb(bayes, channels, origin, options).channels), f"{origin}+prior")
                  for channels, origin in tried if origin != "random"]
    for channels, origin in tried:
        clock.check()  # one start at a time within the run's deadline
        found = climb(objective, channels, origin, options)
        if best is None or found.value > best.value + IMPROVEMENT:
            best = found
        if best.value >= stop_at:
            break
    assert best is not None  # RR is always a start
    return best
