"""Charts (altair): in notebooks as Vega-Lite with a static PNG beside it (so they render offline and in untrusted
notebooks), and as static PDF/SVG for the paper, both through vl-convert (no CDN, no browser)."""
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
    return {"config": {"range": {"category": list(OKABE_ITO)}}}


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


def _vegalite_with_png(spec: dict, **_: object) -> dict:
    """An altair renderer: the Vega-Lite mimetype (interactive where JupyterLab renders it) plus a PNG fallback
    that any viewer shows, made locally by vl-convert."""
    import vl_convert as vlc

    return {"application/vnd.vegalite.v5+json": spec,
            "image/png": base64.b64encode(vlc.vegalite_to_png(spec, scale=1.5)).decode(),
            "text/plain": "<chart: Vega-Lite, PNG fallback>"}


def notebook_mode() -> None:
    """Charts in notebooks: Vega-Lite plus a static PNG, nothing loaded from the network."""
    alt.renderers.register("snaptax", _vegalite_with_png)
    alt.renderers.enable("snaptax")
