"""The problem tabulated afresh: the agent's function and gains on the inputs, or on the
orbits of a certificate's classes. This is all the checker shares with the construction,
and it is the definition of the claim being checked (docs/architecture.md, "The trusted
base"): the file formats' semantics in dpverify/spec/ (named functions, safe expressions,
gain tables), evaluated here for every certificate, without any cache and without the
construction's symmetry detection or orbit tables (spec/symmetric.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

from dpverify.checker.claim import CheckFailed
from dpverify.spec.counts import evaluate_counts, is_count_function
from dpverify.spec.expr import ExpressionError
from dpverify.spec.model import AgentSpec, MultipartySpec
from dpverify.spec.tables import MAX_TABULATED_PARTIES, function_values, gain_rows, table_of

Rows = list[list[Fraction]]


def spec_values(spec: MultipartySpec, agent: AgentSpec) -> tuple[Fraction, ...]:
    """f(x) on every input (input order), tabulated from the spec now (no cache)."""
    if spec.binary and spec.parties > MAX_TABULATED_PARTIES:
        raise CheckFailed(f"{spec.parties} parties: a table over all 2^{spec.parties} inputs "
                          f"is checked up to {MAX_TABULATED_PARTIES} parties")
    key = f"{agent.key}.function" + (".expr" if agent.function.kind == "expr" else "")
    return function_values(agent.function, spec.parties, file=spec.source, key=key,
                           alphabets=spec.alphabets)


def spec_gains(spec: MultipartySpec, agent: AgentSpec, values: Sequence[Fraction]
               ) -> tuple[tuple[Fraction, ...], Rows]:
    """The outputs and the exact gain rows w(f, y) for the function values `values` (one
    per input, or one per orbit), from the spec's gain definition (no cache)."""
    table = table_of(agent, tuple(values), spec.source)
    return table.outputs, [list(row) for row in table.gain_exact]


def gains_by_value(spec: MultipartySpec, agent: AgentSpec, values: Sequence[Fraction]
                   ) -> tuple[tuple[Fraction, ...], dict[Fraction, tuple[Fraction, ...]]]:
    """The outputs and the exact gain row w(f, y) of every distinct function value (sorted),
    from the spec's gain definition (no cache): a gain depends on the input only through
    f(x), so a table over 2^k inputs needs only these rows."""
    distinct = tuple(sorted(set(values)))
    outputs = agent.outputs if agent.outputs is not None else distinct
    return tuple(outputs), dict(gain_rows(agent, distinct, tuple(outputs), spec.source))


def orbit_table(spec: MultipartySpec, agent: AgentSpec, classes: list[list[int]],
                orbits: Sequence[tuple[int, ...]]) -> tuple[tuple[Fraction, ...], Rows]:
    """The agent's outputs and its gain row on every orbit of `classes` (an orbit is the
    number of ones in each class), after confirming that the gains do not change when two
    parties of a class swap: structurally for a function of the number of ones
    (spec/counts.py) and for `bit:i` with party i alone; otherwise on the gains tabulated
    over all inputs, for the adjacent transpositions (they generate each class's group)."""
    fn, k = agent.function, spec.parties
    if is_count_function(fn):  # F(number of ones)
        try:
            counts = evaluate_counts(fn, k)
        except ExpressionError as exc:
            raise CheckFailed(f"the function fails: {exc}") from None
        return spec_gains(spec, agent, [counts[sum(o)] for o in orbits])
    if fn.kind == "named" and fn.name == "bit":
        if [fn.param] not in classes:
            raise CheckFailed(f"bit:{fn.param} is not symmetric unless party {fn.param} is "
                              "alone")
        where = classes.index([fn.param])
        return spec_gains(spec, agent, [Fraction(o[where]) for o in orbits])
    outputs, rows = spec_gains(spec, agent, spec_values(spec, agent))  # all 2^k inputs
    confirm_invariance(k, rows, classes)
    return outputs, [rows[first_input(k, classes, o)] for o in orbits]


def confirm_invariance(k: int, rows: Rows, classes: list[list[int]]) -> None:
    """The gain rows are unchanged by the swap of every two adjacent parties of a class."""
    for c in classes:
        for i, j in itertools.pairwise(c):
            bi, bj = k - i, k - j
            for x, row in enumerate(rows):
                if ((x >> bi) & 1) != ((x >> bj) & 1) and rows[x ^ ((1 << bi) | (1 << bj))] != row:
                    raise CheckFailed(f"the gains change when parties {i} and {j} swap (input "
                                      f"{x:0{k}b}): they are not in one symmetry class")


def first_input(k: int, classes: list[list[int]], weights: tuple[int, ...]) -> int:
    """The orbit's first input (x1 most significant): in each class the ones on the parties
    of smallest index."""
    x = 0
    for cls, w in zip(classes, weights, strict=True):
        for i in sorted(cls)[:w]:
            x |= 1 << (k - i)
    return x
