"""Charts (altair): in notebooks as Vega 5 (compiled from Vega-Lite) with a static PNG beside it (so they render offline
and in untrusted notebooks), and as static PDF/SVG for the paper, both through vl-convert (no CDN, no browser)."""
from __future__ import annotations

import base64
from pathlib import Path

import altair as alt

from .. import paths

alt.data_transformers.disable_max_rows()

# Okabe & Ito's eight colours ("Color Universal Design", 2008): distinguishable with every common colour-vision
# deficiency and in greyscale order; every categorical colour of every chart comes from here (issue 15).
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442", "#000000")


@alt.theme.register("snaptax", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    # The view's size where a chart gives none: altair's default theme's, and Vega-Lite 6's own default; stated, so
    # that the Vega-Lite 5 that compiles the notebooks' charts (NOTEBOOK_VEGALITE, whose default is 200) draws them
    # at the same size.
    return {"config": {"range": {"category": list(OKABE_ITO)},
                       "view": {"continuousWidth": 300, "continuousHeight": 300}}}


def save(chart: alt.TopLevelMixin, name: str, directory: Path | None = None) -> list[Path]:
    """Write `name`.pdf and `name`.svg (static, for LaTeX and the web) with vl-convert."""
    import vl_convert as vlc

    directory = directory or paths.FIGURES_DIR
    directory.mkdir(parents=True, exist_ok=True)
    spec = chart.to_json()
    out = []
    for ext, convert in (("pdf", vlc.vegalite_to_pdf), ("svg", vlc.vegalite_to_svg)):
        path = directory / f"{name}.{ext}"
        data = convert(spec)
        tmp = path.with_suffix(f".{ext}.tmp")
        tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
        tmp.replace(path)
        out.append(path)
    return out


# JupyterLab 4's Vega extension draws Vega 5 specs (MIME type application/vnd.vega.v5+json) with its bundled Vega 5,
# and Vega-Lite specs with its bundled Vega-Lite 5.6, which warns of any newer $schema; altair 6 writes Vega-Lite 6.
# So a notebook gets its charts compiled here (vl-convert, offline) by the newest Vega-Lite 5 that vl-convert ships,
# into Vega 5 specs that the extension draws as they are: nothing compiled in the browser, no version warning.
# tests/test_figures.py checks that this compiler draws every chart of the notebooks as altair's own Vega-Lite does.
NOTEBOOK_MIMETYPE = "application/vnd.vega.v5+json"
NOTEBOOK_VEGALITE = "5.21"
NOTEBOOK_TEXT = "<chart: Vega 5, PNG fallback>"


def notebook_vega(vegalite: dict) -> dict:
    """A Vega-Lite spec as the Vega 5 spec a notebook shows (see NOTEBOOK_MIMETYPE)."""
    import json

    import vl_convert as vlc

    vega = vlc.vegalite_to_vega(vegalite, vl_version=NOTEBOOK_VEGALITE)
    return json.loads(vega) if isinstance(vega, str) else vega


# Drawn as SVG, not on a canvas: text a reader can select and copy, sharp at any zoom, and marks a test (and a page
# made from the notebooks) can find as elements.
NOTEBOOK_METADATA = {NOTEBOOK_MIMETYPE: {"embed_options": {"renderer": "svg"}}}


def _vega_with_png(spec: dict, **_: object) -> tuple[dict, dict]:
    """An altair renderer: the chart as a Vega 5 spec (interactive where JupyterLab renders it) plus a PNG
    fallback that any viewer shows, both made locally by vl-convert; with the metadata that draws it as SVG."""
    import vl_convert as vlc

    return ({NOTEBOOK_MIMETYPE: notebook_vega(spec),
             "image/png": base64.b64encode(vlc.vegalite_to_png(spec, scale=1.5)).decode(),
             "text/plain": NOTEBOOK_TEXT},
            NOTEBOOK_METADATA)


def notebook_mode() -> None:
    """Charts in notebooks: Vega 5 plus a static PNG, nothing loaded from the network."""
    alt.renderers.register("snaptax", _vega_with_png)
    alt.renderers.enable("snaptax")
