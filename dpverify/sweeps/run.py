"""Run a sweep: every point a full verification, through the batch runner (the same worker
path as `dpverify batch` and `dpverify verify`), in parallel, stored as it finishes.

A point's result is spec.md's result object for the problem built at that point; its
`source` names the point (`problems/xor-4.toml@epsilon=0.5`), so the results store, and
`dpverify results`, tell the points apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from dpverify.defaults import DEFAULT_TOL
from dpverify.notebook import Notebook
from dpverify.problem import Problem
from dpverify.records import record
from dpverify.runner.batch import (
    DEFAULT_TIMEOUT,
    Listener,
    as_verdict,
    category,
    problem_text,
    run_problems,
)
from dpverify.runner.store import Store
from dpverify.spec.model import MultipartySpec
from dpverify.status import ExitStatus, verdict_status
from dpverify.sweeps.axes import Axis, Value, Variable
from dpverify.sweeps.labels import figure_scales
from dpverify.sweeps.points import plan_points
from dpverify.sweeps.reference import closed_forms
from dpverify.sweeps.rows import columns_for, result_rows, spec_place, to_csv, to_json_rows
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import worst_verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpverify.runner.executors.local import Executor


@record(eq=False, repr=False)
class SweepPoint(Notebook):
    """One point: where it is (`coords`), what became of it (`status`, as in the store),
    and spec.md's result object. `closed_forms` holds the closed-form optimum of each
    agent that has one (Corollary 3.1 for the observer's XOR)."""

    index: int
    coords: Mapping[str, Value]
    source: str
    status: str
    result: dict[str, Any]
    closed_forms: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    place: Mapping[str, Any] = field(default_factory=dict)  # the problem's privacy columns

    @property
    def verdict(self) -> str:
        return str(self.result.get("verdict", "error"))

    @property
    def category(self) -> str:
        """`invalid` for a point that is not a valid problem, `internal` for a bug met
        while it was verified, else the verdict."""
        return category(self.status, self.verdict)

    def to_dict(self) -> dict[str, Any]:
        """spec.md's result object."""
        return self.result

    notebook_columns = ("agent", "accuracy", "relaxed_optimum", "rr_value", "best_value",
                        "mechanism_optimum", "geometric_value", "gap", "verdict", "method")

    def notebook_title(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.coords.items())
        return f"SweepPoint {where or self.source}: {self.category}"

    def rows(self) -> list[dict[str, Any]]:
        return result_rows(self.result, coords=self.coords, closed_forms=self.closed_forms,
                           source=self.source, place=self.place)


@record(eq=False, repr=False)
class Sweep(Notebook):
    """A finished sweep of one problem (`problem`, read from `source`): its points in grid
    order, the variable on the x axis (`x`) and, when several numbers of parties were
    swept with a privacy level, `series = "parties"` (one curve per k)."""

    problem: str
    source: str
    kind: str
    x: str
    points: tuple[SweepPoint, ...]
    series: str | None = None
    seconds: float = 0.0
    workers: int = 0
    skipped: int = 0  # points read from the results store
    interrupted: bool = False
    notes: tuple[str, ...] = ()
    # for its figure (sweeps/labels.py): the verdicts' tolerance, and by agent the y label
    # and the range of the gain or loss that the tolerance is relative to
    tol: float = DEFAULT_TOL
    labels: Mapping[str, str] = field(default_factory=dict)
    spans: Mapping[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """The worst verdict of the points (an invalid point counts as `error`)."""
        return worst_verdict(as_verdict(p.verdict) for p in self.points).value

    def counts(self) -> Counter[str]:
        return Counter(str(p.category) for p in self.points)

    def exit_status(self) -> ExitStatus:
        return verdict_status((p.category for p in self.points), interrupted=self.interrupted)

    @property
    def columns(self) -> tuple[str, ...]:
        return columns_for(self.kind, self.rows())

    def rows(self) -> list[dict[str, Any]]:
        """One row per point, agent and accuracy (docs/format.md, "Sweep rows")."""
        return [row for point in self.points for row in point.rows()]

    def to_csv(self) -> str:
        return to_csv(self.rows(), self.columns)

    def to_dict(self) -> dict[str, Any]:
        """The sweep as JSON: what was swept, the verdict, and the rows."""
        return {"problem": self.problem, "source": self.source, "kind": self.kind,
                "x": self.x, "series": self.series, "verdict": self.verdict,
                "counts": dict(self.counts()),
                "rows": to_json_rows(self.rows(), self.columns)}

    def to_records(self) -> list[dict[str, Any]]:
        """The rows (docs/format.md, "Sweep rows") as plain JSON values."""
        return to_json_rows(self.rows(), self.columns)

    def notebook_table_columns(self) -> tuple[str, ...]:
        """The rows' columns less those the title says or a table has no room for."""
        return tuple(c for c in self.columns
                     if c not in ("problem", "kind", "source", "reason", "seconds"))

    def notebook_title(self) -> str:
        counts = ", ".join(f"{n} {c}" for c, n in sorted(self.counts().items()))
        over = self.x + (f" x {self.series}" if self.series else "")
        return f"Sweep {self.problem!r}: {len(self.points)} points over {over} ({counts})"

    def plot(self, path: Any = None, *, title: str | None = None, x: str | None = None,
             style: str = "screen", figsize: Any = None) -> Figure:
        """Draw the sweep (dpverify.plotting.plot_sweep: `style` "screen" or "paper",
        `figsize` (width, height) in inches; needs `dpverify[plot]`)."""
        from dpverify.plotting import plot_sweep

        return plot_sweep(self, path, title=title, x=x, style=style, figsize=figsize)


def run_sweep(problem: Problem, options: VerifyOptions, *, level: Axis | None = None,
              parties: Axis | None = None, store: Store | None = None,
              jobs: int | None = None, timeout: float | None = DEFAULT_TIMEOUT,
              force: bool = False, scheduler: str | None = None,
              executor: Executor | None = None, listener: Listener | None = None) -> Sweep:
    """Verify `problem` at every point of the grid `parties x level`, in parallel.

    Every point is validated before anything runs (OptionError or SpecError, exit 2).
    Points the store holds for the same options and version are read, not recomputed,
    unless `force`.
    """
    planned = plan_points(problem, level=level, parties=parties)
    files = [problem_text(p.source, p.problem.text, name=p.problem.name, kind=problem.kind)
             for p in planned]
    report = run_problems(files, options, store=store, jobs=jobs, timeout=timeout,
                          force=force, scheduler=scheduler, executor=executor,
                          listener=listener)
    by_source = {item.source: item for item in report.items}
    points = []
    for p in planned:
        item = by_source.get(p.source)
        if item is None:  # interrupted before it finished
            continue
        spec = p.problem.spec
        # the closed forms are of pure epsilon-DP: none at delta > 0, nor over a delta axis
        pure = level is None or level.variable is not Variable.DELTA
        forms = closed_forms(spec) if isinstance(spec, MultipartySpec) and pure else {}
        points.append(SweepPoint(p.index, p.coords, p.source, item.status, item.to_dict(),
                                 forms, item.seconds, item.cached, spec_place(spec)))
    x = str(level.variable) if level is not None else str(Variable.PARTIES)
    series = "parties" if level is not None and parties is not None \
        and len(parties.values) > 1 else None
    labels, spans = figure_scales(p.problem.spec for p in planned)
    return Sweep(problem.name, problem.source, str(problem.kind), x, tuple(points), series,
                 report.seconds, report.workers, report.skipped, report.interrupted,
                 _notes(problem, level), tol=options.tol, labels=labels, spans=spans)


def _notes(problem: Problem, level: Axis | None) -> tuple[str, ...]:
    spec = problem.spec
    if level is not None and isinstance(spec, MultipartySpec) and len(set(spec.lambdas)) > 1:
        return (f"{problem.source}: the per-party privacy levels are replaced by one "
                f"{level.variable} for every party at each point",)
    return ()
