"""snaptax.paper.figures: the palette every chart uses; charts in notebooks as the installed JupyterLab draws them."""
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
