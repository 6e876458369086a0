"""Pictures of sweeps: the only module that imports matplotlib (an optional extra,
from a wheel `pip install 'dpverify[plot]'`; in the checkout `.venv/bin/pip install -e '.[plot]'`:
dpverify.install), and only when a picture is drawn.

A multi-party sweep draws, for each agent and accuracy, the bound (the relaxed LP's
optimum) and randomized response's value against the swept variable, with each point's
verdict marked on it. Where a closed form exists (the observer's XOR, Corollary 3.1) it is
a third curve, dotted, and its small-epsilon expansion `1/2 + 2^-(k+1) eps^k` is dashed
where epsilon is small. A count sweep draws the optimal mechanism's loss and the geometric
mechanism's, and below them the gap between the two.

Every line drawn from data has a `gid` (`bound|agent|accuracy|series`, ...), so tests can
read back what was plotted. Figures are built without pyplot: no global state, and a
notebook's backend is left alone.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dpverify.errors import InputError
from dpverify.install import install_hint
from dpverify.sweeps.reference import (
    CLOSED_FORM,
    EXPANSION_MAX_EPSILON,
    small_epsilon_expansion,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


FORMATS = ("png", "svg", "pdf")
INSTALL = install_hint("plot")  # as it works here: in the checkout, or from a wheel
X_LABELS = {"epsilon": r"privacy level $\varepsilon$",
            "lambda": r"$\lambda = e^{\varepsilon}$",
            "alpha": r"$\alpha = e^{-\varepsilon}$", "parties": "number of parties k",
            "delta": r"approximate privacy $\delta$"}
# marker, colour, size; `optimal` hollow, so the curve shows through. A verdict not listed
# (none of a sweep's today) is drawn as an error.
VERDICT_MARKERS = {"optimal": ("o", "#1a7f37", 26), "gap": ("X", "#d62728", 70),
                   "interaction-helps": ("P", "#c2185b", 60),
                   "open": ("D", "#8250df", 40), "error": ("^", "#ff7f0e", 55)}
NO_RESULTS = ("no results", "")  # the one panel of a sweep none of whose points has results
# Colours of the curves of several k: none green or red, the verdicts' colours.
SERIES_COLORS = ("C0", "C1", "C4", "C5", "C9", "C6", "C8", "C7")
BOUND_STYLE: dict[str, Any] = {"lw": 5, "alpha": 0.35, "solid_capstyle": "round"}
VALUE_STYLE: dict[str, Any] = {"lw": 1.4}
CLOSED_STYLE: dict[str, Any] = {"ls": ":", "lw": 2.0, "color": "black"}
EXPANSION_STYLE: dict[str, Any] = {"ls": "--", "lw": 1.2, "color": "0.35"}
# delta > 0: the best interactive protocol found (a witness), between RR and the bound
BEST_STYLE: dict[str, Any] = {"ls": "-.", "lw": 1.6, "marker": ".", "markersize": 4}


class Sweep(Protocol):
    """What a plot reads of a sweep (dpverify.sweeps.run.Sweep, or a stored family):
    its problem and kind, the variable on the x axis, the series (one curve per value)
    and its flat rows (docs/format.md, "Sweep rows")."""

    @property
    def problem(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def x(self) -> str: ...

    @property
    def series(self) -> str | None: ...

    def rows(self) -> list[dict[str, Any]]: ...


def check_plot_path(path: str | os.PathLike[str]) -> str:
    """The image format of `path` from its suffix (png, svg or pdf), or InputError (exit
    2) before anything is computed."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise InputError(f"{path}: cannot draw a {'.' + suffix if suffix else 'file without a'}"
                         f" {'file' if suffix else 'suffix'}; name a .png, .svg or .pdf file")
    return suffix


def require_matplotlib() -> Any:
    """matplotlib, or InputError (exit 2) that says how to install it."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise InputError(f"plotting needs matplotlib, an optional extra: {INSTALL}") from None
    return matplotlib


def plot_sweep(sweep: Sweep, path: str | os.PathLike[str] | None = None, *,
               title: str | None = None, x: str | None = None) -> Figure:
    """Draw `sweep`; save it to `path` (.png, .svg or .pdf) when given. `x` puts another
    column of the rows on the x axis (say `epsilon` for a sweep over exact lambdas).
    Returns the matplotlib Figure."""
    fmt = check_plot_path(path) if path is not None else None
    if x is not None and x != sweep.x:
        if x not in X_LABELS or sweep.series == x:
            raise InputError(f"x = {x!r}: draw against one of "
                             f"{', '.join(a for a in X_LABELS if a != sweep.series)}")
        sweep = _Against(sweep, x)
    matplotlib = require_matplotlib()
    rows = _rows_by_panel(sweep.rows())
    with matplotlib.rc_context({"svg.hashsalt": "dpverify", "font.size": 9}):
        if sweep.kind == "count":
            figure = _count_figure(sweep, rows, title)
        else:
            figure = _multiparty_figure(sweep, rows, title)
        if path is not None and fmt is not None:
            _save(figure, Path(path), fmt)
    return figure


@dataclasses.dataclass(frozen=True)
class _Against:
    """A sweep drawn against another column `x` of its rows."""

    sweep: Sweep
    x: str

    @property
    def problem(self) -> str:
        return self.sweep.problem

    @property
    def kind(self) -> str:
        return self.sweep.kind

    @property
    def series(self) -> str | None:
        return self.sweep.series

    def rows(self) -> list[dict[str, Any]]:
        return self.sweep.rows()


def _save(figure: Figure, path: Path, fmt: str) -> None:
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
    try:
        figure.savefig(path, format=fmt, dpi=150, metadata=metadata)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


# -- shared ---------------------------------------------------------------------------------
def _rows_by_panel(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows; a point without results (an invalid point, a timeout) has one row without
    an agent, which goes on every panel, with its verdict and no value (on a panel of its
    own when no point has results)."""
    panels = _panels([r for r in rows if r.get("agent")]) or [NO_RESULTS]
    out = []
    for row in rows:
        if row.get("agent"):
            out.append(row)
        else:
            out += [{**row, "agent": agent, "accuracy": accuracy} for agent, accuracy in panels]
    return out


def _value(row: dict[str, Any], key: str) -> float:
    v = row.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def _valued(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """The points with both coordinates, for a line: a point without a value (an error)
    would cut the line there and leave its neighbours as invisible single points."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True)
             if not (math.isnan(x) or math.isnan(y))]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _panels(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for row in rows:
        key = (str(row["agent"]), str(row.get("accuracy", "")))
        if key not in out:
            out.append(key)
    return out


def _series(sweep: Sweep, rows: Sequence[dict[str, Any]]) -> list[Any]:
    if sweep.series is None:
        return [None]
    out: list[Any] = []
    for row in rows:
        if row.get(sweep.series) not in out:
            out.append(row.get(sweep.series))
    return out


def _select(sweep: Sweep, rows: Sequence[dict[str, Any]], panel: tuple[str, str],
            series: Any) -> list[dict[str, Any]]:
    chosen = [r for r in rows if (r["agent"], r.get("accuracy", "")) == panel
              and (series is None or r.get(sweep.series or "") == series)]
    return sorted(chosen, key=lambda r: _value(r, sweep.x))


def _gid(kind: str, panel: tuple[str, str], series: Any) -> str:
    return f"{kind}|{panel[0]}|{panel[1]}|{'' if series is None else series}"


def _mark_verdicts(ax: Axes, xs: list[float], ys: list[float], verdicts: list[str],
                   gid: str) -> set[str]:
    """A marker on every point by its verdict; a point without a value is marked on the
    bottom edge. The verdicts marked."""
    seen: set[str] = set()
    verdicts = [v if v in VERDICT_MARKERS else "error" for v in verdicts]
    for verdict, (marker, color, size) in VERDICT_MARKERS.items():
        chosen = [(x, y) for x, y, v in zip(xs, ys, verdicts, strict=True) if v == verdict]
        if not chosen:
            continue
        seen.add(verdict)
        face = "white" if verdict == "optimal" else color
        valued = [(x, y) for x, y in chosen if not math.isnan(y)]
        if valued:
            ax.scatter([x for x, _ in valued], [y for _, y in valued], marker=marker, s=size,
                       facecolors=face,
                       edgecolors=color, zorder=5, linewidths=1.0, gid=f"{gid}|{verdict}")
        bottom = [x for x, y in chosen if math.isnan(y) and not math.isnan(x)]
        if bottom:  # no value to put it on: on the bottom edge, inside the x range
            ax.update_datalim([(x, 0.0) for x in bottom], updatey=False)
            ax.scatter(bottom, [0.03] * len(bottom), marker=marker, s=size, facecolors=face,
                       edgecolors=color, transform=ax.get_xaxis_transform(), zorder=5,
                       clip_on=False, gid=f"{gid}|{verdict}|no-value")
    return seen


def _legend(figure: Figure, handles: list[Any], columns: int = 4) -> None:
    figure.legend(handles=handles, loc="outside lower center",
                  ncol=min(len(handles), columns), frameon=False)


def _verdict_handles(seen: set[str]) -> list[Any]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], ls="", marker=m, markersize=math.sqrt(s), color=c,
                   markerfacecolor="white" if v == "optimal" else c, label=f"verdict: {v}")
            for v, (m, c, s) in VERDICT_MARKERS.items() if v in seen]


def _grid_of(n: int, width: float, height: float) -> tuple[int, int, tuple[float, float]]:
    cols = min(2, n)
    rows = math.ceil(n / cols)
    return rows, cols, (max(width * cols, 7.5), height * rows + 1.2)


# -- multi-party ------------------------------------------------------------------------
def _multiparty_figure(sweep: Sweep, rows: list[dict[str, Any]], title: str | None) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = _panels(rows)
    series = _series(sweep, rows)
    nrows, ncols, size = _grid_of(max(1, len(panels)), 5.2, 3.5)
    figure = Figure(figsize=size, layout="constrained")
    axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
    drawn: dict[str, bool] = {"closed": False, "expansion": False, "best": False}
    seen: set[str] = set()
    for ax, panel in zip(axes, panels, strict=False):
        for i, k in enumerate(series):
            color = SERIES_COLORS[i % len(SERIES_COLORS)]
            colors = ("C0", "C1") if len(series) == 1 else (color, color)
            chosen = _select(sweep, rows, panel, k)
            seen |= _draw_multiparty(ax, sweep, chosen, panel, k, colors, drawn)
        ax.set_title("no point has results" if panel == NO_RESULTS
                     else f"{panel[0]} · {panel[1]} accuracy")
        ax.set_xlabel(X_LABELS.get(sweep.x, sweep.x))
        ax.set_ylabel("accuracy")
        ax.grid(alpha=0.3)
        if sweep.x == "parties":
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    single = len(series) == 1
    approximate = drawn["best"]  # delta > 0: the four-ray bound, RR(epsilon, delta)
    handles: list[Any] = [
        Line2D([], [], color="C0" if single else "0.4",
               label="bound: four-ray LP (interactive)" if approximate
               else "bound: relaxed LP optimum", **BOUND_STYLE),
        Line2D([], [], color="C1" if single else "0.4",
               label="RR(epsilon, delta): best non-interactive" if approximate
               else "randomized response", **VALUE_STYLE)]
    if approximate:
        handles.append(Line2D([], [], color="C2" if single else "0.4",
                              label="best interactive protocol found", **BEST_STYLE))
    if drawn["closed"]:
        handles.append(Line2D([], [], label=f"closed form ({CLOSED_FORM})", **CLOSED_STYLE))
    if drawn["expansion"]:
        handles.append(Line2D([], [], label=r"$1/2 + 2^{-(k+1)}\varepsilon^k$ (small "
                                            r"$\varepsilon$)", **EXPANSION_STYLE))
    handles += _verdict_handles(seen)
    if not single:
        handles += [Line2D([], [], color=SERIES_COLORS[i % len(SERIES_COLORS)], lw=2.5,
                           label=f"k = {k}") for i, k in enumerate(series)]
    _legend(figure, handles, columns=4 if ncols > 1 else 3)
    figure.suptitle(title or f"{sweep.problem}: the bound and randomized response against "
                    f"{sweep.x}" + (", and the best interactive protocol" if approximate
                                   else ""))
    return figure


def _draw_multiparty(ax: Axes, sweep: Sweep, rows: list[dict[str, Any]],
                     panel: tuple[str, str], k: Any, colors: tuple[str, str],
                     drawn: dict[str, bool]) -> set[str]:
    xs = [_value(r, sweep.x) for r in rows]
    bound = [_value(r, "relaxed_optimum") for r in rows]
    value = [_value(r, "rr_value") for r in rows]
    ax.plot(*_valued(xs, bound), color=colors[0], gid=_gid("bound", panel, k), **BOUND_STYLE)
    ax.plot(*_valued(xs, value), color=colors[1], gid=_gid("rr", panel, k), **VALUE_STYLE)
    best = [_value(r, "best_value") for r in rows]
    if any(not math.isnan(b) for b in best):  # delta > 0 (docs/theory.md, section 7)
        # a point at delta = 0 has no search: RR is the best protocol known there
        best = [v if math.isnan(b) else b for b, v in zip(best, value, strict=True)]
        ax.plot(*_valued(xs, best), color="C2" if colors[0] == "C0" else colors[0],
                gid=_gid("best", panel, k), **BEST_STYLE)
        drawn["best"] = True
    closed = [_value(r, "closed_form") for r in rows]
    if any(not math.isnan(c) for c in closed):
        ax.plot(*_valued(xs, closed), gid=_gid("closed_form", panel, k), **CLOSED_STYLE)
        drawn["closed"] = True
        drawn["expansion"] |= _draw_expansion(ax, sweep, rows, panel, k)
    marks = [v if not math.isnan(v) else b for v, b in zip(value, bound, strict=True)]
    return _mark_verdicts(ax, xs, marks, [str(r.get("verdict")) for r in rows],
                          _gid("verdict", panel, k))


def _draw_expansion(ax: Axes, sweep: Sweep, rows: list[dict[str, Any]],
                    panel: tuple[str, str], k: Any) -> bool:
    """The small-epsilon expansion, dashed, where epsilon <= EXPANSION_MAX_EPSILON, over
    the points with a closed form (a point that errored may lack its place)."""
    import numpy as np

    rows = [r for r in rows if not (math.isnan(_value(r, "closed_form"))
                                    or math.isnan(_value(r, "parties"))
                                    or math.isnan(_value(r, "epsilon")))]
    if not rows:
        return False
    if sweep.x == "parties":
        level = _value(rows[0], "epsilon")
        if math.isnan(level) or not 0 <= level <= EXPANSION_MAX_EPSILON:
            return False
        ks = [int(r["parties"]) for r in rows]
        ax.plot(ks, [small_epsilon_expansion(n, level) for n in ks],
                gid=_gid("expansion", panel, k), **EXPANSION_STYLE)
        return True
    parties = int(rows[0]["parties"])
    eps = [_value(r, "epsilon") for r in rows]
    low, high = max(0.0, min(eps)), min(max(eps), EXPANSION_MAX_EPSILON)
    if not low < high:
        return False
    grid = np.linspace(low, high, 200)
    x = np.exp(grid) if sweep.x == "lambda" else grid
    ax.plot(x, [small_epsilon_expansion(parties, float(e)) for e in grid],
            gid=_gid("expansion", panel, k), **EXPANSION_STYLE)
    return True


# -- count ------------------------------------------------------------------------------
def _count_figure(sweep: Sweep, rows: list[dict[str, Any]], title: str | None) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = _panels(rows)
    figure = Figure(figsize=(7.5, 6.2), layout="constrained")
    axes = figure.subplots(2, len(panels), squeeze=False, sharex="col",
                           gridspec_kw={"height_ratios": [3, 1.6]})
    seen: set[str] = set()
    for col, panel in enumerate(panels):
        chosen = _select(sweep, rows, panel, None)
        top, bottom = axes[0][col], axes[1][col]
        xs = [_value(r, sweep.x) for r in chosen]
        best = [_value(r, "mechanism_optimum") for r in chosen]
        geometric = [_value(r, "geometric_value") for r in chosen]
        gap = [_value(r, "gap") for r in chosen]
        top.plot(*_valued(xs, best), color="C0", gid=_gid("mechanism_optimum", panel, None),
                 **BOUND_STYLE)
        top.plot(*_valued(xs, geometric), color="C1",
                 gid=_gid("geometric_value", panel, None), **VALUE_STYLE)
        marks = [g if not math.isnan(g) else b for g, b in zip(geometric, best, strict=True)]
        seen |= _mark_verdicts(top, xs, marks, [str(r.get("verdict")) for r in chosen],
                               _gid("verdict", panel, None))
        bottom.axhline(0, color="0.5", lw=0.8)
        bottom.plot(*_valued(xs, gap), color="C3", marker=".", gid=_gid("gap", panel, None))
        top.set_title("no point has results" if panel == NO_RESULTS
                      else f"{panel[0]} · {panel[1]}{_hypothesis(chosen)}")
        top.set_ylabel("loss (minimised)")
        bottom.set_ylabel("gap")
        bottom.set_xlabel(X_LABELS.get(sweep.x, sweep.x))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    handles = [Line2D([], [], color="C0", label=r"optimal $\alpha$-DP mechanism",
                      **BOUND_STYLE),
               Line2D([], [], color="C1", label="geometric mechanism, best post-processing",
                      **VALUE_STYLE),
               Line2D([], [], color="C3", marker=".", label="gap = geometric − optimal")]
    _legend(figure, handles + _verdict_handles(seen), columns=2)
    figure.suptitle(title or f"{sweep.problem}: optimal and geometric mechanisms")
    return figure


def _hypothesis(rows: list[dict[str, Any]]) -> str:
    kinds = {r.get("hypothesis") for r in rows if r.get("hypothesis")}
    if kinds == {"not-monotone"}:
        return " (loss not monotone: outside the theorem)"
    if kinds == {"monotone"}:
        return " (monotone loss)"
    return ""


# -- privacy profiles (audit --profile) -----------------------------------------------------
class Profile(Protocol):
    """What a profile plot reads (dpverify.verifiers.audit.profile.PrivacyProfile)."""

    @property
    def problem(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def plot_profiles(profiles: Sequence[Profile], path: str | os.PathLike[str] | None = None,
                  *, title: str | None = None) -> Figure:
    """The privacy profiles delta_i(epsilon) of protocols (docs/theory.md, "Approximate
    privacy"): one panel per protocol, one curve per party (the upper ends of the exact
    brackets), each party's claim (epsilon_i, delta_i) marked; saved to `path` when given.
    Lines carry gids `profile|<problem>|<party>` and `claim|<problem>|<party>`."""
    fmt = check_plot_path(path) if path is not None else None
    if not profiles:
        raise InputError("no privacy profile to draw (no protocol file was audited)")
    matplotlib = require_matplotlib()
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": "dpverify", "font.size": 9}):
        nrows, ncols, size = _grid_of(len(profiles), 5.2, 3.5)
        figure = Figure(figsize=size, layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, profile in zip(axes, profiles, strict=False):
            data = profile.to_json()
            for i, party in enumerate(data["parties"]):
                color = SERIES_COLORS[i % len(SERIES_COLORS)]
                ax.plot(data["epsilons"], party["deltas"], color=color, lw=1.6,
                        label=f"party {party['party']}",
                        gid=f"profile|{profile.problem}|{party['party']}")
                ax.scatter([party["claimed_epsilon"]], [float(Fraction(party["claimed_delta"]))],
                           marker="*", s=80, color=color, zorder=5,
                           gid=f"claim|{profile.problem}|{party['party']}")
            ax.set_title(profile.problem)
            ax.set_xlabel(X_LABELS["epsilon"])
            ax.set_ylabel(r"achieved $\delta(\varepsilon)$")
            ax.grid(alpha=0.3)
            ax.legend(frameon=False, fontsize=8)
        for ax in axes[len(profiles):]:
            ax.set_visible(False)
        figure.suptitle(title or r"privacy profiles $\delta_i(\varepsilon)$ (stars: the "
                                 r"claimed $(\varepsilon_i, \delta_i)$)")
        if path is not None and fmt is not None:
            _save(figure, Path(path), fmt)
    return figure
