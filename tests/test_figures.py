"""Issue 26, point 8: figures a journal accepts (plotting.py). The PDF's fonts read from
the file (TrueType, never Type 3) and the SVG's text as <text> elements, each beside a
control drawn the old way; the paper style's size, text sizes, titles and legend; the gap
panel with the band |gap| <= tol, which an optimal sweep fills and a gap leaves; the y
label from the gain; identical panels drawn once; --style, --figsize and --title on every
command that draws, and in the API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from inline import InlineExecutor

import dpverify
from dpverify.cli import main
from dpverify.errors import InputError
from dpverify.plotting import STYLES, check_figsize, merge_panels, plot_sweep
from dpverify.sweeps.axes import Variable, parse_levels
from dpverify.sweeps.run import run_sweep
from dpverify.verifiers.options import VerifyOptions

matplotlib = pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"


def sweep_of(path: Path, levels: str, variable: Variable = Variable.EPSILON):
    return run_sweep(dpverify.load(path), VerifyOptions(),
                     level=parse_levels(levels, variable), executor=InlineExecutor())


@pytest.fixture(scope="module")
def xor():
    return sweep_of(PROBLEMS / "xor-2.toml", "0.5,1,2")


@pytest.fixture(scope="module")
def parity():
    return sweep_of(PROBLEMS / "count" / "parity-gap-6.toml", "1/4,1/2,3/4", Variable.ALPHA)


def fonts(pdf: bytes) -> set[bytes]:
    """The subtypes of the font dictionaries of a PDF file (matplotlib writes them as
    plain objects, outside compressed streams)."""
    return set(re.findall(rb"/Subtype\s*/(Type3|TrueType|CIDFontType2|Type1|Type0)", pdf))


def drawn(figure) -> None:
    figure.draw_without_rendering()


# -- fonts a journal accepts -----------------------------------------------------------------
@pytest.mark.parametrize("style", list(STYLES))
def test_the_pdf_embeds_truetype_fonts_never_type3(xor, parity, tmp_path, style):
    for name, sweep in (("xor", xor), ("parity", parity)):
        path = tmp_path / f"{name}-{style}.pdf"
        figure = sweep.plot(path, style=style)
        found = fonts(path.read_bytes())
        assert b"CIDFontType2" in found or b"TrueType" in found, found
        assert b"Type3" not in found
        # the control: the same figure saved with matplotlib's default fonts is Type 3,
        # which the check above catches
        old = tmp_path / f"{name}-{style}-type3.pdf"
        with matplotlib.rc_context({"pdf.fonttype": 3}):
            figure.savefig(old, format="pdf")
        assert b"Type3" in fonts(old.read_bytes())


def test_the_svg_keeps_its_text_as_text(xor, tmp_path):
    path = tmp_path / "xor.svg"
    figure = xor.plot(path, style="paper")
    svg = path.read_text(encoding="utf-8")
    # each <text> element's characters (mathtext writes one <tspan> per glyph)
    texts = [re.sub(r"<[^>]+>|\s*\n\s*", "", t)
             for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)]
    assert any("privacy level" in t for t in texts)  # the x label, searchable
    assert any("bound − RR" in t for t in texts)
    old = tmp_path / "old.svg"  # the control: glyphs as paths, no <text>
    with matplotlib.rc_context({"svg.fonttype": "path"}):
        figure.savefig(old, format="svg")
    assert "<text" not in old.read_text(encoding="utf-8")


# -- the paper style ---------------------------------------------------------------------------
def text_sizes(figure) -> set[float]:
    from matplotlib.text import Text

    return {t.get_fontsize() for t in figure.findobj(Text) if t.get_text().strip()}


def test_the_paper_style_fits_a_column_with_8_to_9_pt_text_and_no_title(xor, parity):
    for sweep in (xor, parity):
        figure = sweep.plot(style="paper")
        width, height = figure.get_size_inches()
        assert width == pytest.approx(3.3) and height < 4.5
        drawn(figure)
        sizes = text_sizes(figure)
        assert sizes and all(8 <= s <= 9 for s in sizes), sizes
        assert figure._suptitle is None
        assert all(not ax.get_title() for ax in figure.axes)  # one panel: no title
        screen = sweep.plot()
        drawn(screen)
        assert screen.get_size_inches()[0] > 3.3 * 2  # the control: the screen style
        assert any(ax.get_title() for ax in screen.axes)


def test_the_paper_style_spreads_four_panels_over_two_columns_within_a_page(xor, and3):
    """Four panels stacked in one 3.3 in column made an 11.9 in tall figure, taller than a
    page; beyond two panels the paper style takes two columns (6.6 in, within a two-column
    layout's 7 in text width), and one or two panels keep the single column (control)."""
    four = and3.plot(style="paper")
    width, height = four.get_size_inches()
    assert width == pytest.approx(6.6) and height <= 7.0, (width, height)
    drawn(four)
    tops = [ax for ax in four.axes if (ax.get_gid() or "").startswith("panel|")]
    assert len(tops) == 4 and len({round(ax.get_position().x0, 3) for ax in tops}) == 2
    assert STYLES["paper"].columns_for(4) == 2 and STYLES["paper"].columns_for(2) == 1
    assert xor.plot(style="paper").get_size_inches()[0] == pytest.approx(3.3)
    assert and3.plot().get_size_inches()[0] == pytest.approx(10.4)  # the screen style


def test_legends_lie_outside_every_axes(xor, parity):
    for sweep in (xor, parity):
        for style in STYLES:
            figure = sweep.plot(style=style)
            drawn(figure)
            (legend,) = figure.legends
            box = legend.get_window_extent()
            for ax in figure.axes:
                assert not box.overlaps(ax.get_window_extent()), (style, ax.get_gid())


def test_every_legend_fits_inside_its_figure(tmp_path):
    """In the paper style's 3.3 in, the legends of a delta sweep ("verdict:
    interaction-helps") and of an audit's privacy profile ("claimed (ε, δ) of the party")
    ran past the figure's right edge and were cut; they now take fewer columns. Control:
    the same handles in the style's own number of columns are wider than the figure."""
    from dpverify.plotting import fitting_legend

    delta = sweep_of(PROBLEMS / "approximate" / "xor-2-delta.toml", "0.5,1")
    profile = dpverify.privacy_profile(PROBLEMS / "protocols" / "adaptive-xor-2.toml")
    figures = {"delta": lambda style: delta.plot(style=style),
               "profile": lambda style: dpverify.plot_profile([profile], style=style)}
    for name, draw in figures.items():
        for style in STYLES:
            figure = draw(style)
            figure.savefig(tmp_path / f"{name}-{style}.png")  # drawn as saved
            (legend,) = figure.legends
            box, page = legend.get_window_extent(), figure.bbox
            assert page.x0 <= box.x0 and box.x1 <= page.x1, (name, style, box, page)
            if style == "paper":  # the control: as many columns as the style asks
                handles = legend.legend_handles
                legend.remove()
                columns = STYLES[style].legend_columns + (name == "profile")
                wide = figure.legend(handles=handles, loc="outside lower center",
                                     ncol=min(columns, len(handles)), frameon=False)
                assert wide.get_window_extent().width > page.width, name
                wide.remove()
                fitted = fitting_legend(figure, handles, columns)
                assert fitted.get_window_extent().width <= page.width, name


def test_a_single_panel_has_one_title_line_not_a_stacked_sentence(xor):
    figure = xor.plot()
    drawn(figure)
    assert figure._suptitle is None
    titled = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titled == ["xor-2: observer · average = worst accuracy"]
    given = xor.plot(title="Observer XOR")
    assert [ax.get_title() for ax in given.axes if ax.get_title()] == ["Observer XOR"]
    none = xor.plot(title="")
    assert not any(ax.get_title() for ax in none.axes) and none._suptitle is None
    paper = xor.plot(style="paper", title="Shown when asked")
    assert [ax.get_title() for ax in paper.axes if ax.get_title()] == ["Shown when asked"]


def test_figsize_replaces_the_styles_size(xor):
    assert list(xor.plot(figsize=(4, 3)).get_size_inches()) == [4, 3]
    assert list(xor.plot(style="paper", figsize="3.3,2.5").get_size_inches()) == [3.3, 2.5]
    assert check_figsize("7x4") == (7.0, 4.0) and check_figsize(None) is None
    for bad in ("3", "a,b", (0, 2), (3, 200), "1,2,3"):
        with pytest.raises(InputError, match="figsize"):
            check_figsize(bad)
    with pytest.raises(InputError, match="choose one of screen, paper"):
        xor.plot(style="poster")


# -- the gap, where it matters -----------------------------------------------------------------
def gap_lines(figure, kind: str = "gap") -> list:
    return [line for ax in figure.axes for line in ax.lines
            if (line.get_gid() or "").startswith(f"{kind}|")]


def test_an_optimal_sweep_shows_no_gap_inside_the_band(xor):
    """The bound, RR and the closed form coincide above; below, bound - RR is drawn, a
    flat line inside the shaded band |gap| <= tol, and a note says so."""
    figure = xor.plot()
    rows = [r for r in xor.rows() if r["accuracy"] == "average"]
    (gap,) = gap_lines(figure)
    assert list(gap.get_ydata()) == [r["relaxed_optimum"] - r["rr_value"] for r in rows]
    (bottom,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("gap-panel|")]
    half = xor.tol * xor.spans["observer"]
    assert half == pytest.approx(1e-9)  # indicator gain: the range is 1
    assert bottom.get_ylim() == pytest.approx((-2 * half, 3.5 * half))
    (band,) = [p for p in bottom.patches if (p.get_gid() or "").startswith("band|")]
    corners = band.get_path().transformed(band.get_patch_transform()).vertices
    assert min(y for _, y in corners) == pytest.approx(-half)
    assert max(y for _, y in corners) == pytest.approx(half)
    notes = [t.get_text() for t in bottom.texts if (t.get_gid() or "").startswith("no-gap|")]
    assert notes == ["no gap: every |gap| ≤ tol"]


def test_a_gap_leaves_the_band_and_is_drawn_at_its_size(parity):
    figure = parity.plot()
    (gap,) = gap_lines(figure)
    assert list(gap.get_ydata()) == [r["gap"] for r in parity.rows()]
    (bottom,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("gap-panel|")]
    assert bottom.get_ylim()[1] >= max(r["gap"] for r in parity.rows())
    assert not [t for t in bottom.texts if (t.get_gid() or "").startswith("no-gap|")]


def test_float_noise_of_a_count_sweep_lies_in_the_band():
    """A monotone consumer: the geometric mechanism is optimal, the LPs differ in their
    last digits; the band (tol times the loss's range) holds every difference."""
    sweep = sweep_of(PROBLEMS / "count" / "abs-10.toml", "0.1,0.5,0.9", Variable.ALPHA)
    assert all(r["verdict"] == "optimal" for r in sweep.rows())
    figure = sweep.plot()
    (bottom,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("gap-panel|")]
    half = sweep.tol * sweep.spans["consumer"]
    assert sweep.spans["consumer"] == 10  # |i - r| on 0..10
    assert all(abs(r["gap"]) <= half for r in sweep.rows())
    assert bottom.get_ylim() == pytest.approx((-2 * half, 3.5 * half))


# -- labels and panels ------------------------------------------------------------------------
def y_labels(figure) -> list[str]:
    return [ax.get_ylabel() for ax in figure.axes
            if (ax.get_gid() or "").startswith("panel|")]


def test_the_y_label_comes_from_the_gain_or_the_loss(xor, parity):
    assert y_labels(xor.plot()) == ["accuracy"]
    abs_gain = sweep_of(PROBLEMS / "sum-abs-4.toml", "1")
    assert set(y_labels(abs_gain.plot())) == {"expected −|f − y|"}
    assert all(r["relaxed_optimum"] < 0 for r in abs_gain.rows())  # not an "accuracy"
    assert y_labels(parity.plot()) == ["expected loss"]  # an expression: no name
    abs_count = sweep_of(PROBLEMS / "count" / "abs-10.toml", "1/2", Variable.ALPHA)
    assert y_labels(abs_count.plot()) == ["expected loss |i − r|"]


@pytest.fixture(scope="module")
def and3():
    return sweep_of(PROBLEMS / "and-3.toml", "0.5,1")  # its average and worst differ


def test_identical_panels_are_drawn_once_and_others_are_not(xor, and3):
    assert [len(g) for g in merge_panels(xor, xor.rows())] == [2]  # average = worst
    groups = merge_panels(and3, and3.rows())
    assert all(len(g) == 1 for g in groups) and len(groups) == 4
    figure = and3.plot()
    panels = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("panel|")]
    assert len(panels) == 4
    # the control of the merge: the same sweep with one value moved past the band
    rows = xor.rows()
    moved = [dict(r, relaxed_optimum=r["relaxed_optimum"] + 1e-6)
             if r["accuracy"] == "worst" else r for r in rows]
    assert [len(g) for g in merge_panels(xor, moved)] == [1, 1]


def test_the_x_axis_can_be_another_column_and_keeps_the_gap_panel(xor):
    figure = plot_sweep(xor, x="lambda", style="paper")
    (bottom,) = [ax for ax in figure.axes if (ax.get_gid() or "").startswith("gap-panel|")]
    assert "lambda" in bottom.get_xlabel()


# -- every command that draws ---------------------------------------------------------------
def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def pdf_size(path: Path) -> tuple[float, float]:
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)", path.read_bytes())
    assert box is not None
    return float(box.group(1)) / 72, float(box.group(2)) / 72


def test_sweep_audit_and_results_take_style_figsize_and_title(tmp_path):
    store = tmp_path / "s.sqlite"
    out = tmp_path / "sweep.pdf"
    got = invoke("sweep", PROBLEMS / "xor-2.toml", "--epsilon", "0.5,1", "--plot", out,
                 "--style", "paper", "--figsize", "3.3,2.6", "--store", store, "-j", "1",
                 "-q")
    assert got.exit_code == 0, got.output
    assert pdf_size(out) == pytest.approx((3.3, 2.6))
    assert b"Type3" not in fonts(out.read_bytes())
    stored = tmp_path / "stored.svg"
    got = invoke("results", "--store", store, "--plot", stored, "--title", "Stored XOR",
                 "--style", "paper")
    assert got.exit_code == 0, got.output
    assert ">Stored XOR<" in stored.read_text(encoding="utf-8")
    profile = tmp_path / "profile.pdf"
    got = invoke("audit", PROBLEMS / "protocols" / "adaptive-xor-2.toml", "--plot", profile,
                 "--style", "paper", "-q")
    assert got.exit_code == 1, got.output  # the protocol is suboptimal
    assert pdf_size(profile)[0] == pytest.approx(3.3)
    for command in (["sweep", PROBLEMS / "xor-2.toml", "--epsilon", "1"],
                    ["audit", PROBLEMS / "protocols" / "adaptive-xor-2.toml"],
                    ["results", "--store", store]):
        refused = invoke(*command, "--style", "paper")
        assert refused.exit_code == 2 and "give --plot FILE" in refused.output
    bad = invoke("sweep", PROBLEMS / "xor-2.toml", "--epsilon", "1", "--plot", out,
                 "--figsize", "wide")
    assert bad.exit_code == 2 and "--figsize" in bad.output


def test_the_api_takes_the_same_options(xor, tmp_path):
    figure = dpverify.plot(xor, tmp_path / "a.png", style="paper", figsize=(3.3, 3.0))
    assert list(figure.get_size_inches()) == [3.3, 3.0]
    profile = dpverify.privacy_profile(PROBLEMS / "protocols" / "adaptive-xor-2.toml")
    figure = dpverify.plot_profile([profile], tmp_path / "p.pdf", style="paper",
                                   title="Adaptive XOR")
    assert figure.get_size_inches()[0] == pytest.approx(3.3)
    assert [ax.get_title() for ax in figure.axes if ax.get_title()] == ["Adaptive XOR"]
    assert b"Type3" not in fonts((tmp_path / "p.pdf").read_bytes())
