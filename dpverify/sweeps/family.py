"""A sweep read back from the results store: what `dpverify results --plot` draws.

A *family* is every stored result of one problem name (a sweep's points share their
problem's name; files that encode epsilon in their names but share a `name` do too). Its
points are placed by the privacy level and size in their result objects; the x axis is
the quantity that varies (epsilon, else delta, else parties; alpha for count problems,
else n).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from dpverify.errors import InputError
from dpverify.sweeps.rows import privacy_columns
from dpverify.sweeps.run import Sweep, SweepPoint


def families(rows: Sequence[Any]) -> list[str]:
    """The problem names of the stored results that have results, sorted."""
    return sorted({row.problem for row in rows if row.result.get("results")})


def _choose(rows: Sequence[Any], problem: str | None) -> list[Any]:
    names = families(rows)
    if not names:
        raise InputError("the results store holds no verified problem to plot")
    if problem is None:
        if len(names) > 1:
            shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            raise InputError(f"the results store holds {len(names)} problem families "
                             f"({shown}); choose one with --problem NAME")
        problem = names[0]
    chosen = [row for row in rows if row.result.get("results")
              and fnmatch.fnmatchcase(row.problem, problem)]
    if not chosen:
        raise InputError(f"--problem {problem!r}: no stored results; the store holds: "
                         f"{', '.join(names[:10])}")
    kinds = {row.kind for row in chosen}
    if len(kinds) > 1:
        raise InputError(f"--problem {problem!r} matches problems of several kinds "
                         f"({', '.join(sorted(kinds))}); choose one family")
    return chosen


def _varies(values: Sequence[Any]) -> bool:
    return len({repr(v) for v in values}) > 1


def sweep_from_store(rows: Sequence[Any], problem: str | None = None) -> Sweep:
    """The stored results of one family (`problem`: a name or a glob; None when the store
    holds one family) as a Sweep. The latest result per point is kept; results whose
    parties have different levels have no place on the axis and are left out (a note)."""
    chosen = _choose(rows, problem)
    latest: dict[str, Any] = {}
    skipped = 0
    for row in sorted(chosen, key=lambda r: r.finished_at):
        place = privacy_columns(row.result)
        if isinstance(place.get("epsilon"), list):
            skipped += 1
            continue
        latest[repr(sorted(place.items()))] = (row, place)
    kind = chosen[0].kind
    places = [place for _, place in latest.values()]
    if kind == "count":
        x = "alpha" if _varies([p.get("alpha") for p in places]) or \
            not _varies([p.get("n") for p in places]) else "n"
        series = None
    else:
        by_k = _varies([p.get("parties") for p in places])
        by_level = _varies([p.get("epsilon") for p in places])
        by_delta = _varies([p.get("delta") or 0.0 for p in places])  # none: delta = 0
        x = "epsilon" if by_level or not (by_k or by_delta) else \
            "delta" if by_delta else "parties"
        series = "parties" if (by_level or by_delta) and by_k else None
    ordered = sorted(latest.values(), key=lambda rp: (rp[1].get(series or "") or 0,
                                                      rp[1].get(x) or 0))
    points = tuple(SweepPoint(i, {"delta": place.get("delta") or 0.0} if x == "delta" else {},
                              row.source, row.status, row.result, {}, row.seconds,
                              cached=True) for i, (row, place) in enumerate(ordered))
    notes = (f"{skipped} stored result{'s' if skipped != 1 else ''} with different levels "
             "per party left out",) if skipped else ()
    name = problem if problem is not None and not _is_glob(problem) else chosen[0].problem
    return Sweep(name, "results store", kind, x, points, series, notes=notes)


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")
