"""snaptax.paper.figures: the palette every chart uses, charts drawn for the width they print at, and charts in
notebooks as the installed JupyterLab draws them."""
from pathlib import Path

import altair as alt
import pandas as pd
import pytest

from snaptax.paper import figures


def test_every_chart_gets_the_colour_blind_safe_palette():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "c": ["a", "b"]})).mark_point().encode(x="x:Q", color="c:N")
    spec = chart.to_dict()
    assert alt.theme.active == "snaptax"
    assert spec["config"]["range"]["category"] == list(figures.OKABE_ITO)


def test_a_chart_names_only_okabe_ito_colours_or_greys():
    df = pd.DataFrame({"x": [1, 2], "c": ["a", "b"]})
    base = alt.Chart(df)
    safe = (base.mark_point().encode(x="x:Q", color="c:N") + base.mark_rule(color="black").encode(x="x:Q")
            + base.mark_line(color=figures.VERMILION).encode(x="x:Q")
            + base.mark_point().encode(x="x:Q", color=alt.value("gray")))
    assert figures.palette_violations(safe.to_dict()) == []
    unsafe = (base.mark_point(color="firebrick").encode(x="x:Q")
              + base.mark_point().encode(x="x:Q", color=alt.Color("c:N", scale=alt.Scale(scheme="category10")))
              + base.mark_point().encode(x="x:Q", color=alt.Color("c:N", scale=alt.Scale(range=["#4c78a8", "black"])))
              + base.mark_point().encode(x="x:Q", fill=alt.condition("datum.x > 1", alt.value("red"),
                                                                    alt.value("gray"))))
    assert figures.palette_violations(unsafe.to_dict()) == ["firebrick", "scheme category10", "#4c78a8", "red"]
    # the theme's own colours: the category and ordinal ranges and a single series' marks
    assert figures.palette_violations({"config": {"range": {"ordinal": {"scheme": "blues"}}}}) == ["scheme blues"]
    assert figures.MARK_COLOUR in figures.OKABE_ITO
    assert alt.Chart(df).mark_point().to_dict()["config"]["mark"]["color"] == figures.MARK_COLOUR


def test_the_paper_refuses_a_chart_outside_the_palette(tmp_path):
    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point(color="firebrick").encode(x="x:Q")
    with pytest.raises(figures.FigureError, match="figure bad: colours outside .*: firebrick"):
        figures.save(chart, "bad", tmp_path)
    assert not list(tmp_path.iterdir())


def _series_chart(series: bool) -> alt.LayerChart:
    """Lines of two series with hollow points on them: colour on both layers, shape on the points' alone."""
    df = pd.DataFrame({"x": [1, 2, 1, 2], "y": [1.0, 2.0, 2.0, 3.0], "s": list("aabb")})
    if series:
        color, shape = figures.series("s", "series", ["a", "b"])
    else:
        color, shape = alt.Color("s:N", title="series"), alt.Shape("s:N", title="series")
    base = alt.Chart(df).encode(x="x:Q", y="y:Q", color=color)
    return base.mark_line() + figures.hollow_points(base).encode(shape=shape)


def test_a_series_drawn_as_lines_and_points_has_one_legend(tmp_path):
    """Vega-Lite draws a colour on two layers and a shape on one of them as two legends of one title; with their
    domain given (figures.series) as one, whose entries have both the colour and the shape."""
    import vl_convert as vlc

    assert figures.duplicate_legends(vlc.vegalite_to_svg(_series_chart(False).to_dict())) == ["series"]
    svg = vlc.vegalite_to_svg(_series_chart(True).to_dict())
    assert figures.duplicate_legends(svg) == []
    assert svg.count("role-legend-title") == 1
    assert "legend titled 'series' for shape and stroke color" in svg
    with pytest.raises(figures.FigureError, match="figure twice: legend drawn twice: series"):
        figures.save(_series_chart(False), "twice", tmp_path)
    assert not list(tmp_path.iterdir())


def _small_print_chart() -> alt.FacetChart:
    df = pd.DataFrame({"x": [1, 2, 3] * 3, "y": [1.0, 2.0, 3.0] * 3, "g": list("aaabbbccc"), "f": list("pqrpqrpqr")})
    return alt.Chart(df).mark_line().encode(x=alt.X("x:Q", title="an axis"), y="y:Q", color="g:N").properties(
        width=150, height=80).facet(column="f:N")


def test_a_chart_is_drawn_for_the_width_it_prints_at(tmp_path):
    """Printed 300 pt wide, a chart drawn some 600 px wide would print its 10 px labels at about 5 pt: drawn for
    print, its text is enlarged until the smallest prints at the minimum, and outside `printed_at` it is not."""
    from snaptax.paper import printsize

    figures.save(_small_print_chart(), "c", tmp_path / "plain")
    drawn, smallest = printsize.svg_text(tmp_path / "plain" / "c.svg")
    assert smallest * 300 / drawn < printsize.MINIMUM_PT - 1
    with figures.printed_at({"c": 300.0}):
        paths = figures.save(_small_print_chart(), "c", tmp_path / "print")
    assert [p.name for p in paths] == ["c.pdf", "c.svg"]
    drawn, smallest = printsize.svg_text(tmp_path / "print" / "c.svg")
    assert printsize.MINIMUM_PT <= smallest * 300 / drawn < printsize.MINIMUM_PT + 1.5
    assert figures._printed_widths == {}


def _lab_static() -> str:
    """The JavaScript of the installed JupyterLab (its built application, in its application directory)."""
    from jupyterlab.commands import get_app_dir

    static = Path(get_app_dir()) / "static"
    return "".join(p.read_text(errors="replace") for p in static.glob("*.js"))


def test_notebooks_send_what_the_installed_jupyterlab_draws_with_its_own_vega():
    """The MIME type is one JupyterLab's renderer takes, and the spec's $schema the major version of the Vega it
    bundles (vega-embed warns when they differ)."""
    import re

    lab = _lab_static()
    assert f'"{figures.NOTEBOOK_MIMETYPE}"' in lab
    bundled = re.findall(r'name:"vega",version:"(\d+)\.\d+\.\d+"', lab)
    assert bundled and set(bundled) == {"5"}
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x:Q", y="y:Q")
    bundle, metadata = figures._vega_with_png(chart.to_dict())
    assert set(bundle) == {figures.NOTEBOOK_MIMETYPE, "image/png", "text/plain"}
    assert bundle[figures.NOTEBOOK_MIMETYPE]["$schema"] == f"https://vega.github.io/schema/vega/v{bundled[0]}.json"
    assert metadata == {figures.NOTEBOOK_MIMETYPE: {"embed_options": {"renderer": "svg"}}}


def _charts() -> dict[str, alt.TopLevelMixin]:
    """Charts of the kinds the studies draw: layers, facets, concatenations, log scales, time, selections."""
    df = pd.DataFrame({"x": [1, 2, 3, 4] * 2, "y": [1.0, 3.0, 2.0, 5.0, 2.0, 2.5, 4.0, 4.5], "g": list("aaaabbbb"),
                       "t": pd.date_range("2026-01-01", periods=8, freq="s")})
    base = alt.Chart(df)
    point = base.mark_point().encode(x="x:Q", y=alt.Y("y:Q", scale=alt.Scale(type="log")), color="g:N")
    band = base.mark_errorband().encode(x="x:Q", y="y:Q")
    pick = alt.selection_point(fields=["g"], bind="legend")
    return {
        "layer": point + base.mark_line().encode(x="x:Q", y="y:Q", color="g:N") + band,
        "facet": base.mark_bar().encode(x="g:N", y="mean(y):Q").facet(column="x:O"),
        "concat": alt.hconcat(point, base.mark_rule().encode(y="max(y):Q")).resolve_scale(color="independent"),
        "time": base.mark_area().encode(x="t:T", y="sum(y):Q", color="g:N"),
        "selection": point.add_params(pick).encode(opacity=alt.condition(pick, alt.value(1), alt.value(0.2))),
        "text": base.mark_text().encode(x="x:Q", y="y:Q", text=alt.Text("y:Q", format=".1f")),
    }


def test_the_notebooks_vega_lite_draws_charts_as_altairs_own_does():
    """Compiled by NOTEBOOK_VEGALITE into Vega 5, each kind of chart draws the same SVG as altair's Vega-Lite
    (vl-convert renders both; checked on every chart of the notebooks when the compiler was chosen)."""
    import vl_convert as vlc

    for name, chart in _charts().items():
        spec = chart.to_dict()
        assert vlc.vega_to_svg(figures.notebook_vega(spec)) == vlc.vegalite_to_svg(spec), name


@pytest.mark.committed
def test_the_committed_notebooks_hold_their_charts_as_they_are_shown():
    import nbformat

    from snaptax import paths
    kinds = {}
    for path in sorted((paths.REPO_ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                for mime in out.get("data", {}):
                    if "vega" in mime:
                        kinds[mime] = kinds.get(mime, 0) + 1
                        assert out["metadata"] == figures.NOTEBOOK_METADATA, path.name
    assert list(kinds) == [figures.NOTEBOOK_MIMETYPE] and kinds[figures.NOTEBOOK_MIMETYPE] >= 9
