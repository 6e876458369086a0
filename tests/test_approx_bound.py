"""The envelope bound (verifiers/approximate/envelope.py; docs/theory.md 7.10): at delta = 0
it is the corner LP's optimum (`dpverify.verify`); for one party it is RR(epsilon, delta)'s
exact value and the optimum of an independent single-channel (epsilon, delta) LP written
here; it never falls below the best non-interactive value, grows with delta, never exceeds
the four-ray bound (an independent dense LP written here) and is below it where interaction
is limited by the protocol's structure; random interactive protocols never beat it; its
exact dual is checked and tampered duals are refused; its size is guarded."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.optimize import linprog

import dpverify
from dpverify.errors import SizeLimitError
from dpverify.spec import loads
from dpverify.spec.model import Accuracy
from dpverify.spec.tables import tabulate
from dpverify.theory.approx.certificate import exact_label_gains
from dpverify.theory.approx.envelope import EnvelopeBound, check_envelope, chord_slacks
from dpverify.theory.exact import lambda_brackets
from dpverify.theory.units import units_of
from dpverify.verifiers.approximate.envelope import exact_envelope, float_envelope
from dpverify.verifiers.approximate.noninteractive import noninteractive_value
from dpverify.verifiers.options import VerifyOptions

OPTIONS = VerifyOptions()


def problem(body: str, parties: int, level: str = "epsilon = 1") -> str:
    return (f'[problem]\nname = "p"\nparties = {parties}\n{level}\n'
            f'accuracy = ["average", "worst"]\n{body}')


def bound_of(spec, agent, accuracy, deltas):
    """The proved bound (normalised) and the non-interactive value's bracket."""
    units = units_of(tabulate(spec, agent).gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    worst = accuracy is Accuracy.WORST
    floats = float_envelope(spec.lambdas, deltas, units.unit, agent.party, worst, OPTIONS)
    proved = exact_envelope(floats, upper, deltas, units.exact, agent.party)
    assert proved is not None, floats.failure
    assert check_envelope(proved, exact_label_gains(units.exact, agent.party))
    rr = noninteractive_value(lower, upper, deltas, units, agent.party, worst, OPTIONS)
    return proved.bound, rr, units, floats


DELTA_ZERO = [
    problem('[observer]\nfunction = "xor"\n', 2),
    problem('[observer]\nfunction = "xor"\n', 3, 'lambda = "5/2"'),
    problem('[observer]\nfunction = "and"\n[[party]]\nindex = 2\nfunction = "or"\n', 3),
    problem('[observer]\nfunction = "majority"\n', 3, "epsilon = [0.5, 1, 2]"),
    problem('[observer]\nfunction = { table = [0, 1, 1, 2, 1, 2, 2, 0] }\n'
            'gain = { matrix = [[1, 0.2, -1], [0.2, 1, 0], [-3, 0, 2]] }\n', 3),
    problem('[[party]]\nindex = 1\nfunction = "sum"\ngain = "-abs"\n', 3, 'lambda = "3"'),
]


@pytest.mark.parametrize("text", DELTA_ZERO)
def test_at_delta_zero_the_bound_is_the_corner_lp(text):
    spec = loads(text, source="<test>")
    result = dpverify.verify(text)
    for r in result.results:
        agent = next(a for a in spec.agents if a.name == r.agent)
        accuracy = Accuracy(r.accuracy)
        bound, rr, units, _ = bound_of(spec, agent, accuracy, [F(0)] * spec.parties)
        assert units.user(bound) == pytest.approx(r.relaxed_optimum, abs=1e-9)
        # and RR(epsilon, 0) reaches it (KOV Theorem 3.1): the bound is tight
        assert float(bound - rr.lower) <= 1e-9


def channel_lp(lam: float, delta: float, gain: np.ndarray, worst: bool) -> float:
    """The best one-bit (epsilon, delta)-DP channel for the observer, written afresh:
    M[x, y] >= 0 (outputs merged by decision), rows sum to 1, slacks
    s[a, y] >= M[a, y] - lam M[b, y], sum_y s[a, y] <= delta; the average or the worst
    case of sum_y M[x, y] gain[x, y]."""
    m = gain.shape[1]
    nM, nS = 2 * m, 2 * m
    size = nM + nS + 1  # the last: t (worst)
    c = np.zeros(size)
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for x in (0, 1):
        row = np.zeros(size)
        row[x * m:(x + 1) * m] = 1
        A_eq.append(row)
        b_eq.append(1.0)
    for a in (0, 1):
        b = 1 - a
        for y in range(m):  # M[a, y] - lam M[b, y] - s[a, y] <= 0
            row = np.zeros(size)
            row[a * m + y], row[b * m + y], row[nM + a * m + y] = 1, -lam, -1
            A_ub.append(row)
            b_ub.append(0.0)
        row = np.zeros(size)
        row[nM + a * m:nM + (a + 1) * m] = 1
        A_ub.append(row)
        b_ub.append(delta)
    if worst:
        c[-1] = -1
        for x in (0, 1):  # t - sum_y M[x, y] gain[x, y] <= 0
            row = np.zeros(size)
            row[x * m:(x + 1) * m] = -gain[x]
            row[-1] = 1
            A_ub.append(row)
            b_ub.append(0.0)
    else:
        c[:nM] = -gain.ravel() / 2
    bounds = [(0, None)] * (size - 1) + [(None, None) if worst else (0, 0)]
    res = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


ONE_PARTY = [
    '[observer]\nfunction = "bit:1"\n',
    '[observer]\nfunction = "bit:1"\noutputs = [0, 1, 2]\n'
    'gain = { matrix = [[1, 0.5, -2], [-1, 0.5, 1]] }\n',
    '[observer]\nfunction = { table = [2, 0] }\ngain = "-square"\noutputs = [0, 1, 2]\n',
    '[observer]\nfunction = "bit:1"\ngain = { matrix = [[3, -1], [0, 1]] }\n',
]


@pytest.mark.parametrize("body", ONE_PARTY)
@pytest.mark.parametrize("level,delta", [('lambda = "3"', F(1, 10)), ("epsilon = 1", F(1, 5)),
                                         ('lambda = "3/2"', F(1, 2)), ("epsilon = 0", F(1, 3)),
                                         ('lambda = "4"', F(0))])
def test_one_party_the_bound_is_rr_delta_and_the_channel_lp(body, level, delta):
    spec = loads(problem(body, 1, level), source="<test>")
    agent = spec.agents[0]
    for accuracy in spec.accuracies:
        bound, rr, units, _ = bound_of(spec, agent, accuracy, [delta])
        direct = channel_lp(spec.lambdas[0], float(delta), units.unit,
                            accuracy is Accuracy.WORST)
        assert float(bound) == pytest.approx(direct, abs=1e-9)
        assert float(bound - rr.lower) <= 1e-9
        assert rr.lower <= rr.upper


def test_the_channel_lp_is_not_trivial():
    """Negative control for the independent LP: delta matters, and RR at a smaller delta
    falls below the bound at a larger one."""
    spec = loads(problem('[observer]\nfunction = "bit:1"\n', 1, 'lambda = "3"'),
                 source="<test>")
    gain = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert channel_lp(3.0, 0.0, gain, False) == pytest.approx(0.75)
    assert channel_lp(3.0, 0.2, gain, False) == pytest.approx(0.2 + 0.8 * 0.75)
    bound, _, _, _ = bound_of(spec, spec.agents[0], Accuracy.AVERAGE, [F(1, 5)])
    _, rr, _, _ = bound_of(spec, spec.agents[0], Accuracy.AVERAGE, [F(1, 10)])
    assert bound == F(4, 5) and rr.lower == F(1, 10) + F(9, 10) * F(3, 4) < bound


def test_the_bound_grows_with_delta_and_stays_above_rr():
    spec = loads(problem('[observer]\nfunction = "majority"\n[[party]]\nindex = 1\n'
                         'function = "xor"\n', 3), source="<test>")
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            previous = None
            for delta in (F(0), F(1, 20), F(1, 10), F(1, 4)):
                bound, rr, _, _ = bound_of(spec, agent, accuracy, [delta] * 3)
                assert rr.upper <= bound + F(1, 10**12)
                if previous is not None:
                    assert bound >= previous - F(1, 10**12)
                previous = bound


def test_the_xor_bound_is_the_interactive_value_at_rational_levels():
    """Two-party XOR at lambda = 3, delta = 1/10: the interactive protocol of issue 20
    reaches d + (1 - d)(p^2 + (1 - p)^2) = 53/80 (p = 3/4); the bound proves exactly that,
    and RR(3, 1/10) reaches c^2 + w^2 = 521/800 exactly."""
    spec = loads(problem('[observer]\nfunction = "xor"\n', 2, 'lambda = "3"'),
                 source="<test>")
    for accuracy in spec.accuracies:
        bound, rr, _, _ = bound_of(spec, spec.agents[0], accuracy, [F(1, 10)] * 2)
        assert rr.lower == rr.upper == F(521, 800)
        assert bound == F(53, 80)


def test_the_bound_is_refused_above_the_size_guard():
    from dpverify.verifiers.approximate.verifier import approximate_result

    spec = loads(problem('[observer]\nfunction = "xor"\n', 4), source="<test>")
    small = VerifyOptions(max_nonzeros=1000)
    with pytest.raises(SizeLimitError, match="four rays per party"):
        approximate_result(spec, spec.agents[0], Accuracy.AVERAGE, [F(1, 10)] * 4, small)


def test_irrational_levels_use_the_upper_bracket():
    spec = loads(problem('[observer]\nfunction = "xor"\n', 2), source="<test>")
    units = units_of(tabulate(spec, spec.agents[0]).gain_exact)
    lower, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    assert lower[0] < upper[0] and float(upper[0] - lower[0]) < 1e-15  # e is irrational
    floats = float_envelope(spec.lambdas, [F(1, 10)] * 2, units.unit, 0, False, OPTIONS)
    proved = exact_envelope(floats, upper, [F(1, 10)] * 2, units.exact, 0)
    assert proved is not None and proved.lambdas == upper
    lam = math.e
    p = lam / (1 + lam)
    assert float(proved.bound) == pytest.approx(0.1 + 0.9 * (p * p + (1 - p) ** 2), abs=1e-12)


# -- tighter than the four-ray bound, never above it -------------------------------------
def four_ray_lp(lams: list[float], deltas: list[float], G: np.ndarray, worst: bool) -> float:
    """The four-ray LP of docs/theory.md 7.4, written afresh as one dense LP: theta[s, l]
    >= 0 per product of rays and label, sum_l P_l[x] = 1, the hockey-stick rows."""
    k = len(lams)
    n, L = G.shape
    R = [np.array([[lam / (1 + lam), 1 / (1 + lam), 1.0, 0.0],
                   [1 / (1 + lam), lam / (1 + lam), 0.0, 1.0]]) for lam in lams]
    T = np.ones((1, 1))
    for r in R:
        T = np.kron(T, r)
    S = T.shape[1]
    cols = S * L + (1 if worst else 0)
    A_eq = np.zeros((n, cols))
    for lab in range(L):
        A_eq[:, lab * S:(lab + 1) * S] = T
    A_ub, b_ub = [], []
    for i in range(k):
        for a in (0, 1):
            for o in range(1 << (k - 1)):
                bits = [(o >> (k - 2 - t)) & 1 for t in range(k - 1)]
                bits.insert(i, a)
                row = np.zeros(cols)
                for s in range(S):
                    digits = [(s // 4 ** (k - 1 - j)) % 4 for j in range(k)]
                    if digits[i] == 2 + a:
                        value = np.prod([R[j][bits[j], digits[j]] for j in range(k) if j != i])
                        row[[lab * S + s for lab in range(L)]] = value
                A_ub.append(row)
                b_ub.append(deltas[i])
    c = np.zeros(cols)
    if worst:
        for x in range(n):
            row = np.zeros(cols)
            for lab in range(L):
                row[lab * S:(lab + 1) * S] = -T[x] * G[x, lab]
            row[-1] = 1
            A_ub.append(row)
            b_ub.append(0.0)
        c[-1] = -1
    else:
        for lab in range(L):
            c[lab * S:(lab + 1) * S] = -(T.T @ G[:, lab]) / n
    bounds = [(0, None)] * (S * L) + ([(None, None)] if worst else [])
    res = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(n),
                  bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


TIGHTER = [  # (problem body, parties, level, delta)
    ('[observer]\nfunction = "and"\n', 2, 'lambda = "3"', F(1, 10)),
    ('[observer]\nfunction = "and"\n', 3, "epsilon = 1", F(1, 20)),
    ('[observer]\nfunction = "majority"\n[[party]]\nindex = 1\nfunction = "and"\n', 3,
     "epsilon = 0.5", F(1, 5)),
    ('[observer]\nfunction = "xor"\n', 3, "epsilon = [0.5, 1, 1.5]", F(1, 10)),
]


@pytest.mark.parametrize("body,parties,level,delta", TIGHTER)
def test_the_envelope_is_at_most_the_four_ray_bound(body, parties, level, delta):
    """Every four-ray dual is an envelope dual (b(s) = mu . T_s, equality in every chord),
    so the envelope bound is at most the four-ray LP's optimum; for the observer's worst
    case of AND it is strictly below (the four-ray LP mixes reveals that no protocol
    makes: docs/theory.md 7.10)."""
    spec = loads(problem(body, parties, level), source="<test>")
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            bound, rr, units, _ = bound_of(spec, agent, accuracy, [delta] * parties)
            from dpverify.theory.approx.rays import agent_label_gains

            G = agent_label_gains(units.unit, agent.party)
            four = four_ray_lp(list(spec.lambdas), [float(delta)] * parties, G,
                               accuracy is Accuracy.WORST)
            assert float(bound) <= four + 1e-9
            assert rr.lower <= bound
            if "and" in body and agent.party == 0 and accuracy is Accuracy.WORST:
                assert float(bound) < four - 1e-4


def test_the_and_examples_exact_bounds():
    """2-party AND's observer, worst case, at (3, 1/10): 67/96 (the four-ray bound is
    0.7024...); 3-party AND at (3, 1/20): 2583/4000. Both are reached by the witness
    (tests/test_approx_search.py)."""
    two = loads(problem('[observer]\nfunction = "and"\n', 2, 'lambda = "3"'), source="<t>")
    bound, _, _, _ = bound_of(two, two.agents[0], Accuracy.WORST, [F(1, 10)] * 2)
    assert bound == F(67, 96)
    three = loads(problem('[observer]\nfunction = "and"\n', 3, 'lambda = "3"'), source="<t>")
    bound, _, _, _ = bound_of(three, three.agents[0], Accuracy.WORST, [F(1, 20)] * 3)
    assert bound == F(2583, 4000)


# -- the dual check: tampered duals are refused ---------------------------------------------
def _proved(text: str, accuracy: Accuracy, deltas) -> tuple[EnvelopeBound, list]:
    spec = loads(text, source="<test>")
    agent = spec.agents[0]
    units = units_of(tabulate(spec, agent).gain_exact)
    _, upper = lambda_brackets(spec.lambdas_exact, spec.epsilons_exact)
    floats = float_envelope(spec.lambdas, deltas, units.unit, agent.party,
                            accuracy is Accuracy.WORST, OPTIONS)
    proved = exact_envelope(floats, upper, deltas, units.exact, agent.party)
    assert proved is not None
    return proved, exact_label_gains(units.exact, agent.party)


def test_tampered_envelope_duals_are_refused():
    text = problem('[observer]\nfunction = "and"\n', 2, 'lambda = "3"')
    proved, gains = _proved(text, Accuracy.WORST, [F(1, 10)] * 2)
    assert check_envelope(proved, gains)
    b = list(proved.b)
    # (E1): lower b at a product of corners and the bound with it
    lowered = EnvelopeBound(proved.bound - F(1, 100), proved.prior,
                            tuple(v - F(1, 100) if s == 0 else v for s, v in enumerate(b)),
                            proved.nu, proved.lambdas, proved.deltas)
    assert not check_envelope(lowered, gains)
    # (E2): raise b at a reveal state until some chord fails, the bound unchanged
    slacks = chord_slacks(proved.lambdas, [4, 4], b)
    assert min(slacks) >= 0
    worst_chord = min(range(len(slacks)), key=slacks.__getitem__)
    bent = list(b)
    for s in range(len(b)):  # every product with party 1 at reveal0 or reveal1
        if s // 4 in (2, 3):
            bent[s] += 1
    bumped = EnvelopeBound(proved.bound, proved.prior, tuple(bent), proved.nu,
                           proved.lambdas, proved.deltas)
    assert min(chord_slacks(proved.lambdas, [4, 4], bent)) < 0
    assert not check_envelope(bumped, gains)
    del worst_chord
    # nu < 0, and a wrong bound
    negative = EnvelopeBound(proved.bound, proved.prior, proved.b,
                             (F(-1),) + proved.nu[1:], proved.lambdas, proved.deltas)
    assert not check_envelope(negative, gains)
    wrong = EnvelopeBound(proved.bound - F(1, 10**9), proved.prior, proved.b, proved.nu,
                          proved.lambdas, proved.deltas)
    assert not check_envelope(wrong, gains)
