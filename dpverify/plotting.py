"""Pictures of sweeps: the only module that imports matplotlib (an optional extra,
from a wheel `pip install 'dpverify[plot]'`; in the checkout `.venv/bin/pip install -e '.[plot]'`:
dpverify.install), and only when a picture is drawn.

A multi-party sweep draws, for each agent and accuracy, the bound (the relaxed LP's
optimum) and randomized response's value against the swept variable, with each point's
verdict marked on it, and below them the gap between the two: the quantity a verdict is
about, which the curves above hide when they coincide. The gap panel shades the band
`|gap| <= tol` (the verdicts' tolerance, relative to the range of the gain), so that an
optimal sweep reads as a flat line inside the band rather than as float noise. Where a
closed form exists (the observer's XOR, Corollary 3.1) it is a third curve, dotted, and
its small-epsilon expansion `1/2 + 2^-(k+1) eps^k` is dashed where epsilon is small. With
delta > 0 the best interactive protocol found is drawn too, and the gap panel shows what
it gains over RR(epsilon, delta) beside the room the bound leaves. A count sweep draws the
optimal mechanism's loss and the geometric mechanism's, and below them their gap. Panels
whose values are identical (an XOR's average and worst case) are drawn once.

Two styles: `screen` (the default) and `paper`, for a journal: one 3.3 in column, 8 pt
text, no title, the legend below the axes. Every figure embeds its fonts as TrueType in
PDF (`pdf.fonttype = 42`: journals refuse Type 3) and keeps text as text in SVG.

Every line drawn from data has a `gid` (`bound|agent|accuracy|series`, ...), and every
axes one too (`panel|agent|accuracy`, `gap-panel|agent|accuracy`), so tests can read back
what was plotted. Figures are built without pyplot: no global state, and a notebook's
backend is left alone.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dpverify.defaults import DEFAULT_TOL, PLOT_STYLES
from dpverify.errors import InputError
from dpverify.install import install_hint
from dpverify.records import record
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
# Plain Unicode where no superscript is needed: one searchable <text> in an SVG
X_LABELS = {"epsilon": "privacy level ε",
            "lambda": r"$\lambda = e^{\varepsilon}$",
            "alpha": r"$\alpha = e^{-\varepsilon}$", "parties": "number of parties k",
            "delta": "approximate privacy δ", "n": "largest answer n"}
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
GAP_STYLE: dict[str, Any] = {"lw": 1.2, "marker": ".", "markersize": 4}
ROOM_STYLE: dict[str, Any] = {"lw": 1.0, "ls": ":"}  # delta > 0: bound - RR, room only
BAND_STYLE: dict[str, Any] = {"color": "0.55", "alpha": 0.25, "lw": 0}
# Fonts a journal's checker accepts: TrueType in PDF and PostScript (never Type 3), text as
# text in SVG (searchable, editable); reproducible files.
FONT_RC: dict[str, Any] = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
                           "svg.hashsalt": "dpverify"}
MAX_FIGSIZE = 50.0  # inches
DENSE = 20  # points on a curve past which its verdict markers shrink
NO_GAP = "no gap: every |gap| ≤ tol"  # the gap panel's note when every gap is in the band


@record
class Style:
    """How a figure is laid out: each panel's size (inches: the values' axes, then the gap
    axes below them), the panels per row, the text size (pt), whether titles are drawn,
    and the scale of the verdict markers."""

    name: str
    width: float
    height: float
    gap_height: float
    columns: int
    font: float
    titles: bool
    markers: float
    legend_columns: int
    min_width: float = 0.0
    lines: float = 1.0  # the scale of line widths and small markers
    stacked: int = 0  # up to this many panels in `columns` a row; more: `wide_columns`
    wide_columns: int = 0

    def columns_for(self, panels: int) -> int:
        """Panels a row for a figure of `panels` panels: the paper style stacks one or two
        panels in its column and spreads more over two columns (a figure spanning the page's
        two columns, 6.6 in, within the 7 in text width of IEEE's and ACM's two-column
        layouts), so that four panels are 6.4 in tall, not 11.9 in (taller than a page)."""
        wide = self.wide_columns if self.stacked and panels > self.stacked else self.columns
        return max(1, min(wide, panels))

    def draw(self, base: dict[str, Any]) -> dict[str, Any]:
        """A line style (the STYLE dicts above) at this style's scale."""
        out = dict(base)
        for key in ("lw", "markersize"):
            if key in out:
                out[key] = out[key] * self.lines
        return out

    def rc(self) -> dict[str, Any]:
        return {**FONT_RC, "font.size": self.font, "axes.titlesize": self.font,
                "axes.labelsize": self.font, "legend.fontsize": self.font,
                "xtick.labelsize": self.font, "ytick.labelsize": self.font,
                "figure.titlesize": self.font + 1,
                "axes.linewidth": 0.8 if self.name == "screen" else 0.6}


STYLES = {
    "screen": Style("screen", width=5.2, height=3.0, gap_height=1.3, columns=2, font=9,
                    titles=True, markers=1.0, legend_columns=4, min_width=7.5),
    # a journal column: 3.3 in wide, 8 pt text (9 pt is the most a caption-sized figure
    # takes), no title (the caption says it), one or two panels stacked (more: two columns,
    # Style.columns_for), the legend below the axes
    "paper": Style("paper", width=3.3, height=1.9, gap_height=0.85, columns=1, font=8,
                   titles=False, markers=0.45, legend_columns=2, lines=0.6, stacked=2,
                   wide_columns=2),
}


assert tuple(STYLES) == PLOT_STYLES  # the command line's choices (defaults.py)


def check_style(style: str) -> Style:
    """The Style named `style`, or InputError (exit 2) naming the styles."""
    if style not in STYLES:
        raise InputError(f"style {style!r}: choose one of {', '.join(STYLES)}")
    return STYLES[style]


def check_figsize(figsize: Any) -> tuple[float, float] | None:
    """(width, height) in inches from a pair of numbers or "W,H" (also "WxH"); None for
    None; InputError (exit 2) for anything else."""
    if figsize is None:
        return None
    parts: Sequence[Any]
    if isinstance(figsize, str):
        parts = figsize.replace("x", ",").split(",")
    else:
        parts = list(figsize) if isinstance(figsize, Sequence) else [figsize]
    try:
        width, height = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise InputError(f"figsize {figsize!r}: give the width and the height in inches, "
                         "such as 3.3,2.5") from None
    if not (0 < width <= MAX_FIGSIZE and 0 < height <= MAX_FIGSIZE):
        raise InputError(f"figsize {figsize!r}: width and height must be > 0 and at most "
                         f"{MAX_FIGSIZE:g} inches")
    return width, height


class Sweep(Protocol):
    """What a plot reads of a sweep (dpverify.sweeps.run.Sweep, or a stored family):
    its problem and kind, the variable on the x axis, the series (one curve per value)
    and its flat rows (docs/format.md, "Sweep rows"). It may also carry `tol`, `labels`
    and `spans` (sweeps/labels.py: the verdicts' tolerance, each agent's y label and the
    range of its gain or loss)."""

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
               title: str | None = None, x: str | None = None, style: str = "screen",
               figsize: Any = None) -> Figure:
    """Draw `sweep`; save it to `path` (.png, .svg or .pdf) when given. `x` puts another
    column of the rows on the x axis (say `epsilon` for a sweep over exact lambdas);
    `style` is "screen" or "paper" (module docstring); `figsize` (width, height) in
    inches replaces the style's size; `title` replaces the default title ("" for none;
    the paper style draws none unless given one). Returns the matplotlib Figure."""
    fmt = check_plot_path(path) if path is not None else None
    chosen = check_style(style)
    size = check_figsize(figsize)
    if x is not None and x != sweep.x:
        if x not in X_LABELS or sweep.series == x:
            raise InputError(f"x = {x!r}: draw against one of "
                             f"{', '.join(a for a in X_LABELS if a != sweep.series)}")
        sweep = _Against(sweep, x)
    matplotlib = require_matplotlib()
    rows = _rows_by_panel(sweep.rows())
    with matplotlib.rc_context(chosen.rc()):
        layout = _Layout(sweep, rows, chosen, size, title)
        if sweep.kind == "count":
            figure = _count_figure(sweep, rows, layout)
        else:
            figure = _multiparty_figure(sweep, rows, layout)
        if path is not None and fmt is not None:
            _save(figure, Path(path), fmt)
    return figure


@record
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

    @property
    def tol(self) -> float:
        return float(getattr(self.sweep, "tol", DEFAULT_TOL))

    @property
    def labels(self) -> Any:
        return getattr(self.sweep, "labels", {})

    @property
    def spans(self) -> Any:
        return getattr(self.sweep, "spans", {})

    def rows(self) -> list[dict[str, Any]]:
        return self.sweep.rows()


def _save(figure: Figure, path: Path, fmt: str) -> None:
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
    try:
        figure.savefig(path, format=fmt, dpi=150 if fmt == "png" else "figure",
                       metadata=metadata)
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


# the columns that make two panels the same picture
SAME_COLUMNS = ("relaxed_optimum", "rr_value", "best_value", "closed_form",
                "mechanism_optimum", "geometric_value", "verdict")


def _signature(sweep: Sweep, rows: Sequence[dict[str, Any]], panel: tuple[str, str]
               ) -> list[tuple[Any, ...]]:
    """What a panel draws: per point, its series, x, values and verdict."""
    chosen = sorted((r for r in rows if (r["agent"], r.get("accuracy", "")) == panel),
                    key=lambda r: (str(r.get(sweep.series or "")), _value(r, sweep.x)))
    return [(r.get(sweep.series or ""), r.get(sweep.x), *(r.get(c) for c in SAME_COLUMNS))
            for r in chosen]


def _alike(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]], within: float) -> bool:
    """The same picture: the same points and verdicts, every value within `within` (the
    band of the verdicts: values they do not tell apart)."""
    if len(a) != len(b):
        return False
    for row_a, row_b in zip(a, b, strict=True):
        for u, v in zip(row_a, row_b, strict=True):
            numbers = all(isinstance(w, int | float) and not isinstance(w, bool)
                          for w in (u, v))
            if numbers and not abs(u - v) <= within:
                return False
            if not numbers and u != v:
                return False
    return True


def merge_panels(sweep: Sweep, rows: Sequence[dict[str, Any]]
                 ) -> list[list[tuple[str, str]]]:
    """The panels in order, those that would draw the same picture grouped (one panel
    drawn for each group, named after all of them): the same agent's accuracies whose
    values agree within the verdicts' band: an XOR's average and worst case, or two
    agents that see the same."""
    groups: list[tuple[list[tuple[Any, ...]], list[tuple[str, str]]]] = []
    for panel in _panels(rows):
        sig = _signature(sweep, rows, panel)
        values = [v for row in sig for v in row[2:] if isinstance(v, float)]
        within = _half_band(sweep, panel[0], values)
        for seen, members in groups:
            if _alike(seen, sig, within):
                members.append(panel)
                break
        else:
            groups.append((sig, [panel]))
    return [members for _, members in groups]


def panel_name(group: Sequence[tuple[str, str]], count: bool = False) -> str:
    """`observer · average` or, for panels drawn once, `observer · average = worst` (one
    agent) or `observer average = party:1 average`."""
    if group[0] == NO_RESULTS:
        return "no point has results"
    agents = {agent for agent, _ in group}
    if len(agents) == 1:
        what = " = ".join(accuracy for _, accuracy in group)
        return f"{group[0][0]} · {what}" + ("" if count else " accuracy")
    return " = ".join(f"{agent} {accuracy}" for agent, accuracy in group)


def _mark_verdicts(ax: Axes, xs: list[float], ys: list[float], verdicts: list[str],
                   gid: str, scale: float = 1.0) -> set[str]:
    """A marker on every point by its verdict; a point without a value is marked on the
    bottom edge. The verdicts marked. Past DENSE points a curve's markers shrink, so that
    they do not hide it."""
    if len(xs) > DENSE:
        scale *= max(0.3, DENSE / len(xs))
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
            ax.scatter([x for x, _ in valued], [y for _, y in valued], marker=marker,
                       s=size * scale, facecolors=face, edgecolors=color, zorder=5,
                       linewidths=1.0 if scale >= 1 else 0.7, gid=f"{gid}|{verdict}")
        bottom = [x for x, y in chosen if math.isnan(y) and not math.isnan(x)]
        if bottom:  # no value to put it on: on the bottom edge, inside the x range
            ax.update_datalim([(x, 0.0) for x in bottom], updatey=False)
            ax.scatter(bottom, [0.03] * len(bottom), marker=marker, s=size * scale,
                       facecolors=face, edgecolors=color, transform=ax.get_xaxis_transform(),
                       zorder=5, clip_on=False, gid=f"{gid}|{verdict}|no-value")
    return seen


def _verdict_handles(seen: set[str], scale: float) -> list[Any]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], ls="", marker=m, markersize=math.sqrt(s * scale), color=c,
                   markerfacecolor="white" if v == "optimal" else c, label=f"verdict: {v}")
            for v, (m, c, s) in VERDICT_MARKERS.items() if v in seen]


class _Layout:
    """The figure's grid: one column of axes pairs (values above, gap below) per panel,
    `style.columns` panels a row; its size (the style's, or `figsize`); its titles."""

    def __init__(self, sweep: Sweep, rows: list[dict[str, Any]], style: Style,
                 figsize: tuple[float, float] | None, title: str | None) -> None:
        self.style = style
        self.groups = merge_panels(sweep, rows) if rows else [[NO_RESULTS]]
        n = len(self.groups)
        self.ncols = style.columns_for(n)
        self.nrows = math.ceil(n / self.ncols)
        width = max(style.width * self.ncols, style.min_width)
        height = (style.height + style.gap_height) * self.nrows + \
            (1.3 if style.name == "screen" else 0.9)  # the legend below
        self.size = figsize or (width, height)
        self.title = title
        self.problem = sweep.problem

    def figure(self) -> tuple[Figure, list[tuple[Axes, Axes]]]:
        from matplotlib.figure import Figure

        figure = Figure(figsize=self.size, layout="constrained")
        grid = figure.add_gridspec(2 * self.nrows, self.ncols, height_ratios=[
            self.style.height, self.style.gap_height] * self.nrows)
        pairs = []
        for i, group in enumerate(self.groups):
            r, c = divmod(i, self.ncols)
            top = figure.add_subplot(grid[2 * r, c])
            bottom = figure.add_subplot(grid[2 * r + 1, c], sharex=top)
            top.tick_params(labelbottom=False)
            top.set_gid(f"panel|{group[0][0]}|{group[0][1]}")
            bottom.set_gid(f"gap-panel|{group[0][0]}|{group[0][1]}")
            pairs.append((top, bottom))
        return figure, pairs

    def titles(self, figure: Figure, pairs: list[tuple[Axes, Axes]], count: bool) -> None:
        """One title line, never two stacked: a single panel carries the figure's title
        (its panel's name by default); several panels their names, and the figure the
        title (the problem's name by default). The paper style draws the panels' names
        only when there are several, and a title only when one is given."""
        single = len(pairs) == 1
        names = [panel_name(g, count) for g in self.groups]
        if single:
            default = f"{self.problem}: {names[0]}" if self.style.titles else ""
            text = default if self.title is None else self.title
            if text:
                pairs[0][0].set_title(text)
            return
        for (top, _), name in zip(pairs, names, strict=True):
            top.set_title(name)
        text = (self.problem if self.style.titles else "") if self.title is None else \
            self.title
        if text:
            figure.suptitle(text)

    def legend(self, figure: Figure, handles: list[Any]) -> None:
        """Below every axes (outside them): a legend never covers data."""
        fitting_legend(figure, handles, self.style.legend_columns,
                       handlelength=1.8 * self.style.lines ** 0.5, columnspacing=1.0)


def fitting_legend(figure: Figure, handles: list[Any], columns: int, **options: Any) -> Any:
    """The figure's legend below its axes, in at most `columns` columns, and in fewer when
    it would be wider than the figure: its labels then ran past the figure's edge and were
    cut (the paper style's 3.3 in column: "verdict: interaction-helps", "claimed (ε, δ) of
    the party")."""
    ncol = max(1, min(len(handles), columns))
    while True:
        legend = figure.legend(handles=handles, loc="outside lower center", ncol=ncol,
                               frameon=False, **options)
        if ncol == 1 or legend.get_window_extent().width <= figure.bbox.width:
            return legend
        legend.remove()
        ncol -= 1


def _band(ax: Axes, half: float, label_inside: str, gaps: Sequence[float],
          gid: str, font: float) -> None:
    """The band |gap| <= half (the verdicts' tolerance), shaded, and the axis scaled to
    show it: when every gap lies inside it, the axis spans twice the band below and more
    above, the line runs flat inside it and a note says so (at the top, above the band,
    clear of the line)."""
    ax.axhspan(-half, half, gid=f"band|{gid}", **BAND_STYLE)
    ax.axhline(0, color="0.5", lw=0.6)
    finite = [abs(g) for g in gaps if not math.isnan(g)]
    if finite and max(finite) <= half:
        ax.set_ylim(-2 * half, 3.5 * half)
        ax.set_yticks([-half, 0, half])
        ax.text(0.01, 0.96, label_inside, transform=ax.transAxes, va="top", ha="left",
                fontsize=max(8.0, font - 1), color="0.25", gid=f"no-gap|{gid}")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)


def _half_band(sweep: Sweep, agent: str, values: Sequence[float]) -> float:
    """tol times the range of the agent's gain (or loss): the band of the verdicts; when
    the range is unknown (a stored family), of the values' size, at least 1."""
    tol = float(getattr(sweep, "tol", DEFAULT_TOL))
    span = getattr(sweep, "spans", {}).get(agent)
    if span is None or not span > 0:
        finite = [abs(v) for v in values if not math.isnan(v)]
        span = max([1.0, *finite])
    return tol * span


def _y_label(sweep: Sweep, agent: str, values: Sequence[float], count: bool) -> str:
    label = getattr(sweep, "labels", {}).get(agent)
    if label:
        return str(label)
    if count:
        return "expected loss"
    finite = [v for v in values if not math.isnan(v)]
    return "accuracy" if finite and min(finite) >= 0 and max(finite) <= 1 else \
        "expected gain"


# -- multi-party ------------------------------------------------------------------------
def _multiparty_figure(sweep: Sweep, rows: list[dict[str, Any]], layout: _Layout) -> Figure:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    series = _series(sweep, rows)
    figure, pairs = layout.figure()
    drawn: dict[str, bool] = {"closed": False, "expansion": False, "best": False}
    seen: set[str] = set()
    st = layout.style
    scale = st.markers
    for (top, bottom), group in zip(pairs, layout.groups, strict=True):
        panel = group[0]
        values: list[float] = []
        gaps: list[float] = []
        for i, k in enumerate(series):
            color = SERIES_COLORS[i % len(SERIES_COLORS)]
            colors = ("C0", "C1") if len(series) == 1 else (color, color)
            chosen = _select(sweep, rows, panel, k)
            seen |= _draw_multiparty(top, sweep, chosen, panel, k, colors, drawn,
                                     layout.style)
            gaps += _draw_gap(bottom, sweep, chosen, panel, k,
                              "C3" if len(series) == 1 else color, layout.style)
            values += [_value(r, c) for r in chosen for c in ("relaxed_optimum", "rr_value")]
        top.set_ylabel(_y_label(sweep, panel[0], values, False))
        bottom.set_ylabel("gain over RR" if drawn["best"] else "bound − RR")
        bottom.set_xlabel(X_LABELS.get(sweep.x, sweep.x))
        half = _half_band(sweep, panel[0], values)
        _band(bottom, half, NO_GAP, gaps, "|".join(panel), st.font)
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
        if sweep.x == "parties":
            from matplotlib.ticker import MaxNLocator

            bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    layout.titles(figure, pairs, count=False)
    single = len(series) == 1
    approximate = drawn["best"]  # delta > 0: the envelope bound, RR(epsilon, delta)
    grey = "0.4"
    handles: list[Any] = [
        Line2D([], [], color="C0" if single else grey,
               label="bound (envelope LP)" if approximate
               else "bound (relaxed LP)", **st.draw(BOUND_STYLE)),
        Line2D([], [], color="C1" if single else grey,
               label="RR(ε, δ), non-interactive" if approximate
               else "randomized response (RR)", **st.draw(VALUE_STYLE))]
    if approximate:
        handles.append(Line2D([], [], color="C2" if single else grey,
                              label="best protocol found", **st.draw(BEST_STYLE)))
    if drawn["closed"]:
        handles.append(Line2D([], [], label=f"closed form ({CLOSED_FORM})",
                              **st.draw(CLOSED_STYLE)))
    if drawn["expansion"]:
        handles.append(Line2D([], [], label=r"$1/2 + 2^{-(k+1)}\varepsilon^k$ (small ε)",
                              **st.draw(EXPANSION_STYLE)))
    handles.append(Line2D([], [], color="C3" if single else grey,
                          label="best found − RR" if approximate else "gap = bound − RR",
                          **st.draw(GAP_STYLE)))
    if approximate:
        handles.append(Line2D([], [], color="C3" if single else grey,
                              label="bound − RR (room)", **st.draw(ROOM_STYLE)))
    handles.append(Patch(label="|gap| ≤ tol", **BAND_STYLE))
    handles += _verdict_handles(seen, scale)
    if not single:
        handles += [Line2D([], [], color=SERIES_COLORS[i % len(SERIES_COLORS)], lw=2.5,
                           label=f"k = {k}") for i, k in enumerate(series)]
    layout.legend(figure, handles)
    return figure


def _draw_multiparty(ax: Axes, sweep: Sweep, rows: list[dict[str, Any]],
                     panel: tuple[str, str], k: Any, colors: tuple[str, str],
                     drawn: dict[str, bool], st: Style) -> set[str]:
    xs = [_value(r, sweep.x) for r in rows]
    bound = [_value(r, "relaxed_optimum") for r in rows]
    value = [_value(r, "rr_value") for r in rows]
    ax.plot(*_valued(xs, bound), color=colors[0], gid=_gid("bound", panel, k),
            **st.draw(BOUND_STYLE))
    ax.plot(*_valued(xs, value), color=colors[1], gid=_gid("rr", panel, k),
            **st.draw(VALUE_STYLE))
    best = _best(rows)
    if best is not None:  # delta > 0 (docs/theory.md, section 7)
        ax.plot(*_valued(xs, best), color="C2" if colors[0] == "C0" else colors[0],
                gid=_gid("best", panel, k), **st.draw(BEST_STYLE))
        drawn["best"] = True
    closed = [_value(r, "closed_form") for r in rows]
    if any(not math.isnan(c) for c in closed):
        ax.plot(*_valued(xs, closed), gid=_gid("closed_form", panel, k),
                **st.draw(CLOSED_STYLE))
        drawn["closed"] = True
        drawn["expansion"] |= _draw_expansion(ax, sweep, rows, panel, k, st)
    marks = [v if not math.isnan(v) else b for v, b in zip(value, bound, strict=True)]
    return _mark_verdicts(ax, xs, marks, [str(r.get("verdict")) for r in rows],
                          _gid("verdict", panel, k), st.markers)


def _best(rows: list[dict[str, Any]]) -> list[float] | None:
    """delta > 0: the best protocol found at each point (RR's value at a point at delta =
    0, which has no search: RR is the best protocol known there); None without any."""
    best = [_value(r, "best_value") for r in rows]
    if all(math.isnan(b) for b in best):
        return None
    value = [_value(r, "rr_value") for r in rows]
    return [v if math.isnan(b) else b for b, v in zip(best, value, strict=True)]


def _draw_gap(ax: Axes, sweep: Sweep, rows: list[dict[str, Any]], panel: tuple[str, str],
              k: Any, color: str, st: Style) -> list[float]:
    """The gap panel's lines: bound − RR (pure privacy); with delta > 0 the best protocol
    found minus RR (what interaction is shown to gain) and bound − RR (room) dotted. The
    values drawn."""
    xs = [_value(r, sweep.x) for r in rows]
    bound = [_value(r, "relaxed_optimum") for r in rows]
    value = [_value(r, "rr_value") for r in rows]
    room = [b - v for b, v in zip(bound, value, strict=True)]
    best = _best(rows)
    if best is None:
        ax.plot(*_valued(xs, room), color=color, gid=_gid("gap", panel, k),
                **st.draw(GAP_STYLE))
        return room
    gain = [b - v for b, v in zip(best, value, strict=True)]
    ax.plot(*_valued(xs, gain), color=color, gid=_gid("advantage", panel, k),
            **st.draw(GAP_STYLE))
    ax.plot(*_valued(xs, room), color=color, gid=_gid("room", panel, k),
            **st.draw(ROOM_STYLE))
    return gain + room


def _draw_expansion(ax: Axes, sweep: Sweep, rows: list[dict[str, Any]],
                    panel: tuple[str, str], k: Any, st: Style) -> bool:
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
                gid=_gid("expansion", panel, k), **st.draw(EXPANSION_STYLE))
        return True
    parties = int(rows[0]["parties"])
    eps = [_value(r, "epsilon") for r in rows]
    low, high = max(0.0, min(eps)), min(max(eps), EXPANSION_MAX_EPSILON)
    if not low < high:
        return False
    grid = np.linspace(low, high, 200)
    x = np.exp(grid) if sweep.x == "lambda" else grid
    ax.plot(x, [small_epsilon_expansion(parties, float(e)) for e in grid],
            gid=_gid("expansion", panel, k), **st.draw(EXPANSION_STYLE))
    return True


# -- count ------------------------------------------------------------------------------
def _count_figure(sweep: Sweep, rows: list[dict[str, Any]], layout: _Layout) -> Figure:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    figure, pairs = layout.figure()
    seen: set[str] = set()
    st = layout.style
    scale = st.markers
    for (top, bottom), group in zip(pairs, layout.groups, strict=True):
        panel = group[0]
        chosen = _select(sweep, rows, panel, None)
        xs = [_value(r, sweep.x) for r in chosen]
        best = [_value(r, "mechanism_optimum") for r in chosen]
        geometric = [_value(r, "geometric_value") for r in chosen]
        gap = [_value(r, "gap") for r in chosen]
        top.plot(*_valued(xs, best), color="C0", gid=_gid("mechanism_optimum", panel, None),
                 **st.draw(BOUND_STYLE))
        top.plot(*_valued(xs, geometric), color="C1",
                 gid=_gid("geometric_value", panel, None), **st.draw(VALUE_STYLE))
        marks = [g if not math.isnan(g) else b for g, b in zip(geometric, best, strict=True)]
        seen |= _mark_verdicts(top, xs, marks, [str(r.get("verdict")) for r in chosen],
                               _gid("verdict", panel, None), scale)
        bottom.plot(*_valued(xs, gap), color="C3", gid=_gid("gap", panel, None),
                    **st.draw(GAP_STYLE))
        _band(bottom, _half_band(sweep, panel[0], best + geometric),
              NO_GAP, gap, "|".join(panel), st.font)
        top.set_ylabel(_y_label(sweep, panel[0], best, True))
        bottom.set_ylabel("geometric − optimal")
        bottom.set_xlabel(X_LABELS.get(sweep.x, sweep.x))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    layout.titles(figure, pairs, count=True)
    if layout.style.titles and layout.title is None:  # the theorem's hypothesis, if known
        hypothesis = _hypothesis(rows)
        if hypothesis and len(pairs) == 1:
            pairs[0][0].set_title(pairs[0][0].get_title() + hypothesis)
    handles = [Line2D([], [], color="C0", label="optimal α-DP mechanism",
                      **st.draw(BOUND_STYLE)),
               Line2D([], [], color="C1", label="geometric, post-processed",
                      **st.draw(VALUE_STYLE)),
               Line2D([], [], color="C3", label="gap = geometric − optimal", **st.draw(GAP_STYLE)),
               Patch(label="|gap| ≤ tol", **BAND_STYLE)]
    layout.legend(figure, handles + _verdict_handles(seen, scale))
    return figure


def _hypothesis(rows: list[dict[str, Any]]) -> str:
    kinds = {r.get("hypothesis") for r in rows if r.get("hypothesis")}
    if kinds == {"not-monotone"}:
        return " (loss not monotone)"
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
                  *, title: str | None = None, style: str = "screen",
                  figsize: Any = None) -> Figure:
    """The privacy profiles delta_i(epsilon) of protocols (docs/theory.md, "Approximate
    privacy"): one panel per protocol, one curve per party (the upper ends of the exact
    brackets), each party's claim (epsilon_i, delta_i) marked; saved to `path` when given.
    `style`, `figsize` and `title` as for plot_sweep. Lines carry gids
    `profile|<problem>|<party>` and `claim|<problem>|<party>`."""
    fmt = check_plot_path(path) if path is not None else None
    chosen = check_style(style)
    size = check_figsize(figsize)
    if not profiles:
        raise InputError("no privacy profile to draw (no protocol file was audited)")
    matplotlib = require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    with matplotlib.rc_context(chosen.rc()):
        ncols = chosen.columns_for(len(profiles))
        nrows = math.ceil(len(profiles) / ncols)
        default = (max(chosen.width * ncols, chosen.min_width),
                   chosen.height * 1.2 * nrows + (1.0 if chosen.name == "screen" else 0.7))
        figure = Figure(figsize=size or default, layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
        most = 0
        for ax, profile in zip(axes, profiles, strict=False):
            data = profile.to_json()
            most = max(most, len(data["parties"]))
            for i, party in enumerate(data["parties"]):
                color = SERIES_COLORS[i % len(SERIES_COLORS)]
                ax.plot(data["epsilons"], party["deltas"], color=color, lw=1.6,
                        gid=f"profile|{profile.problem}|{party['party']}")
                ax.scatter([party["claimed_epsilon"]], [float(Fraction(party["claimed_delta"]))],
                           marker="*", s=80 * max(chosen.markers, 0.6), color=color, zorder=5,
                           gid=f"claim|{profile.problem}|{party['party']}")
            ax.set_gid(f"profile-panel|{profile.problem}")
            ax.set_xlabel(X_LABELS["epsilon"])
            ax.set_ylabel("achieved δ(ε)")
            ax.grid(alpha=0.3)
            if len(profiles) > 1:
                ax.set_title(profile.problem)
        for ax in axes[len(profiles):]:
            ax.set_visible(False)
        text = title if title is not None else (
            (profiles[0].problem if len(profiles) == 1 else "privacy profiles")
            if chosen.titles else "")
        if text:
            if len(profiles) == 1:
                axes[0].set_title(text)
            else:
                figure.suptitle(text)
        handles = [Line2D([], [], color=SERIES_COLORS[i % len(SERIES_COLORS)], lw=1.6,
                          label=f"party {i + 1}") for i in range(most)]
        handles.append(Line2D([], [], ls="", marker="*", color="0.3", markersize=8,
                              label="claimed (ε, δ) of the party"))
        fitting_legend(figure, handles, chosen.legend_columns + 1)
        if path is not None and fmt is not None:
            _save(figure, Path(path), fmt)
    return figure


def plot_survey(report: Any, path: str | os.PathLike[str] | None = None, *,
                title: str | None = None, style: str = "screen",
                figsize: Any = None) -> Figure:
    """A survey under approximate privacy as heat maps (docs/theory.md 7.12): one panel
    per gain and accuracy, epsilon across and delta up; each cell coloured by the largest
    gain of interaction over RR(epsilon, delta) among the surveyed functions (the best
    protocol found minus RR: the exact interactive optimum's gain where the bracket is
    closed), and labelled with how many functions interaction helps out of all (`?` when
    some stay open). Cells carry gids `cell|<gain>|<accuracy>|<epsilon>|<delta>` and the
    panels `survey-panel|<gain>|<accuracy>`. `style`, `figsize` and `title` as for
    plot_sweep; saved to `path` when given."""
    fmt = check_plot_path(path) if path is not None else None
    chosen = check_style(style)
    size = check_figsize(figsize)
    rows = [r for r in report.rows() if "delta" in r]
    if not rows:
        raise InputError("a survey is drawn as heat maps over (epsilon, delta): give --delta")
    matplotlib = require_matplotlib()
    from matplotlib.figure import Figure

    panels = list(dict.fromkeys((r["gain"], r["accuracy"]) for r in rows))
    epsilons = sorted({r["epsilon"] for r in rows})
    deltas = sorted({r["delta"] for r in rows})
    top = max((r["largest_gap"] for r in rows), default=0.0) or 1.0
    with matplotlib.rc_context(chosen.rc()):
        ncols = chosen.columns_for(len(panels))
        nrows = math.ceil(len(panels) / ncols)
        default = (max(chosen.width * ncols, chosen.min_width),
                   chosen.height * 1.1 * nrows + 0.8)
        figure = Figure(figsize=size or default, layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
        image = None
        for ax, (gain, accuracy) in zip(axes, panels, strict=False):
            grid = [[math.nan] * len(epsilons) for _ in deltas]
            for r in rows:
                if (r["gain"], r["accuracy"]) != (gain, accuracy):
                    continue
                i, j = deltas.index(r["delta"]), epsilons.index(r["epsilon"])
                grid[i][j] = r["largest_gap"]
                mark = "?" if r.get("open") else ""
                ax.text(j, i, f"{r['interaction-helps']}/{r['functions']}{mark}",
                        ha="center", va="center", fontsize=chosen.font * 0.8,
                        color="white" if r["largest_gap"] > 0.55 * top else "black",
                        gid=f"cell|{gain}|{accuracy}|{r['epsilon']:g}|{r['delta']:g}")
            image = ax.imshow(grid, origin="lower", cmap="magma_r", vmin=0.0, vmax=top,
                              aspect="auto")
            ax.set_xticks(range(len(epsilons)), [f"{e:g}" for e in epsilons])
            ax.set_yticks(range(len(deltas)), [f"{d:g}" for d in deltas])
            ax.set_xlabel(X_LABELS["epsilon"])
            ax.set_ylabel(X_LABELS["delta"])
            ax.set_gid(f"survey-panel|{gain}|{accuracy}")
            if len(panels) > 1 or chosen.titles:
                ax.set_title(f"{accuracy}" + (f", {gain}" if len({g for g, _ in panels}) > 1
                                             else ""))
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        if image is not None:
            figure.colorbar(image, ax=list(axes[:len(panels)]),
                            label="largest gain of interaction over RR(ε, δ)")
        plan = report.plan
        text = title if title is not None else (
            f"survey: {plan.parties} parties, {report.functions} functions"
            if chosen.titles else "")
        if text:
            figure.suptitle(text)
        if path is not None and fmt is not None:
            _save(figure, Path(path), fmt)
    return figure
