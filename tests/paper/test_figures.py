"""snaptax.paper.figures: the palette every chart uses."""
import altair as alt
import pandas as pd

from snaptax.paper import figures


def test_every_chart_gets_the_colour_blind_safe_palette():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "c": ["a", "b"]})).mark_point().encode(x="x:Q", color="c:N")
    spec = chart.to_dict()
    assert alt.theme.active == "snaptax"
    assert spec["config"]["range"]["category"] == list(figures.OKABE_ITO)
