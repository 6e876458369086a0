"""Optimal decision rules for a fixed protocol (KOV 2015, eqs. (2) and (5)).

Average accuracy: decide yhat(tau) = argmax_y sum_x P[x, tau] w(f(x), y) (eq. 5); a party
restricts the sum to the inputs with its own bit (eq. 2). The worst-case rules (eqs. 4, 6)
are LPs and live in dpverify.verifiers.multiparty.lps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpverify.theory.rr import kron_apply, rr_channel


def own_bit_mask(k: int, party: int, bit: int) -> np.ndarray:
    """Boolean mask of the inputs whose party-th bit (1-based, x1 most significant) is `bit`."""
    index = np.arange(1 << k)
    return ((index >> (k - party)) & 1) == bit


def rr_scores(lambdas: Sequence[float], gain: np.ndarray) -> np.ndarray:
    """scores[tau, y] = sum_x P_RR[x, tau] gain[x, y], by the fast Kronecker transform."""
    return kron_apply([rr_channel(lam).T for lam in lambdas], gain)


def argmax_rule(scores: np.ndarray) -> np.ndarray:
    """A deterministic decision rule Q[tau, y] in {0, 1}: the first maximiser of each row."""
    rule = np.zeros_like(scores)
    rule[np.arange(scores.shape[0]), np.argmax(scores, axis=1)] = 1.0
    return rule


def observer_average_rule(lambdas: Sequence[float], gain: np.ndarray) -> tuple[float, np.ndarray]:
    """Eq. (5): the observer's optimal rule for RR and its average accuracy."""
    scores = rr_scores(lambdas, gain)
    return float(scores.max(axis=1).sum() / gain.shape[0]), argmax_rule(scores)


def party_average_rule(
    lambdas: Sequence[float], party: int, gain: np.ndarray
) -> tuple[float, np.ndarray]:
    """Eq. (2): party i's optimal rule per own bit b; returns (accuracy, rules[b, tau, y])."""
    k = len(lambdas)
    total = 0.0
    rules = []
    for bit in (0, 1):
        masked = np.where(own_bit_mask(k, party, bit)[:, None], gain, 0.0)
        scores = rr_scores(lambdas, masked)
        total += float(scores.max(axis=1).sum())
        rules.append(argmax_rule(scores))
    return total / gain.shape[0], np.stack(rules)


def rule_accuracy(
    P: np.ndarray, gain: np.ndarray, rule: np.ndarray, party: int | None = None
) -> np.ndarray:
    """Per-input expected gain of a rule under protocol P (dense, straight from the definition).

    E[w(f(x), yhat)] = sum_tau sum_y P[x, tau] rule[tau, y] w(f(x), y); for a party the rule
    is rules[b, tau, y] and input x uses b = x_party.
    """
    n = P.shape[0]
    if party is None:
        return np.einsum("xt,ty,xy->x", P, rule, gain)
    k = n.bit_length() - 1
    out = np.zeros(n)
    for bit in (0, 1):
        mask = own_bit_mask(k, party, bit)
        out[mask] = np.einsum("xt,ty,xy->x", P[mask], rule[bit], gain[mask])
    return out


def party_label_gains(gain: np.ndarray, party: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Gains of party i's merged columns: labels (y0, y1), gain(x, (y0, y1)) = w(f_i(x), y_{x_i}).

    theory.md, the relaxed protocol LP. Returns (2^k x m^2 array, the label pairs).
    """
    n, m = gain.shape
    k = n.bit_length() - 1
    own = own_bit_mask(k, party, 1)
    labels = [(a, b) for a in range(m) for b in range(m)]
    out = np.empty((n, len(labels)))
    for col, (a, b) in enumerate(labels):
        out[:, col] = np.where(own, gain[:, b], gain[:, a])
    return out, labels
