"""Charts (altair): in notebooks as Vega 5 (compiled from Vega-Lite) with a static PNG beside it (so they render offline
and in untrusted notebooks), and as static PDF/SVG for the paper, both through vl-convert (no CDN, no browser).

For the paper a chart is drawn for the width it prints at (`printed_at`): its text is enlarged until the smallest
prints at the legible minimum (snaptax.paper.printsize, issue 50), and every colour it names comes from one
colour-blind-safe palette (`palette_violations`)."""
from __future__ import annotations

import base64
import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import altair as alt

from .. import paths
from ..errors import SnaptaxError
from . import printsize

alt.data_transformers.disable_max_rows()

# Okabe & Ito's eight colours ("Color Universal Design", 2008): distinguishable with every common colour-vision
# deficiency; every categorical colour of every chart comes from here (issue 15). In the order a chart's categories
# take them: four hues apart first (blue, orange, bluish green, reddish purple), then the vermilion, near the
# orange, the sky blue, near the blue (side by side in the first four they looked alike in print, issue 50: "two
# similar blues"), and the yellow, faint on white.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
# a single series' marks (Vega-Lite's own default, #4c78a8, is no Okabe-Ito colour): Okabe-Ito's blue
MARK_COLOUR = OKABE_ITO[0]
# the palette's vermilion: a mark set apart from a single series' blue
VERMILION = "#D55E00"
# Series that coincide at a point (one baseline, equal costs) hide one another's filled marks: each series gets its own
# hollow shape (a shape encoding beside the colour), so a point under another stays visible (issue 50).
SERIES_SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down"]


def hollow_points(chart: alt.Chart, size: int = 50) -> alt.Chart:
    """`chart`'s point mark drawn hollow (an outline of 1.5 px): coinciding points of different shapes all show."""
    return chart.mark_point(filled=False, size=size, strokeWidth=1.5)


def series(field: str, title: str, domain: Sequence[str]) -> tuple[alt.Color, alt.Shape]:
    """The colour and the hollow shape (SERIES_SHAPES) of a chart's series, for a chart that draws them as lines,
    bands or rules and as points: one legend for both. Vega-Lite merges a colour's and a shape's legend only when
    their scales have one domain; left to itself it unions the colour's domain over every layer that encodes it and
    the shape's over the points' layer alone, and draws the same legend twice (`duplicate_legends`). `domain`: the
    series in the order their colours and shapes are taken."""
    values = list(domain)
    return (alt.Color(f"{field}:N", title=title, scale=alt.Scale(domain=values)),
            alt.Shape(f"{field}:N", title=title, scale=alt.Scale(domain=values, range=SERIES_SHAPES)))


def duplicate_legends(svg: str) -> list[str]:
    """The legend titles a drawn chart (its SVG) shows more than once, in order, once each: a legend drawn twice
    (series' colour and shape not merged: `series`)."""
    import xml.etree.ElementTree as ET

    titles = ["".join(g.itertext()).strip() for g in ET.fromstring(svg).iter()
              if "role-legend-title" in g.get("class", "").split()]
    return list(dict.fromkeys(t for t in titles if titles.count(t) > 1))


# colours a chart may name beside the palette: greys carry no category (reference lines, shaded bands)
NEUTRALS = frozenset({"black", "white", "gray", "grey", "lightgray", "lightgrey", "darkgray", "darkgrey"})


class FigureError(SnaptaxError):
    """A chart of the paper names a colour outside the colour-blind-safe palette, or draws a legend twice."""


@alt.theme.register("snaptax", enable=True)
def _theme() -> alt.theme.ThemeConfig:
    # The view's size where a chart gives none: altair's default theme's, and Vega-Lite 6's own default; stated, so
    # that the Vega-Lite 5 that compiles the notebooks' charts (NOTEBOOK_VEGALITE, whose default is 200) draws them
    # at the same size. Ordinal colours too come from the palette: Vega-Lite's default ordinal shades of blue are
    # hard to tell apart in print.
    return {"config": {"range": {"category": list(OKABE_ITO), "ordinal": list(OKABE_ITO)},
                       "mark": {"color": MARK_COLOUR},
                       "view": {"continuousWidth": 300, "continuousHeight": 300}}}


_COLOUR_KEYS = ("color", "fill", "stroke")


def _colours(node: Any, key: str = "", colour: bool = False) -> Iterator[str]:
    """Every colour a Vega-Lite spec names: marks' colours, colour encodings' values (conditions too), their
    scales' ranges and schemes, and the config's ranges (`colour`: within a colour encoding). The data are not
    looked into."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("data", "datasets"):
                continue
            if isinstance(v, str) and (k in _COLOUR_KEYS or (colour and k == "value")):
                yield v
            elif colour and k == "scheme":
                yield f"scheme {v.get('name') if isinstance(v, dict) else v}"
            elif colour and k == "range" and isinstance(v, list):
                yield from (c for c in v if isinstance(c, str))
            elif k == "range" and key == "config" and isinstance(v, dict):
                for r in v.values():
                    if isinstance(r, list):
                        yield from (c for c in r if isinstance(c, str))
                    else:
                        yield f"scheme {r.get('scheme') if isinstance(r, dict) else r}"
            else:
                yield from _colours(v, k, colour or k in _COLOUR_KEYS)
    elif isinstance(node, list):
        for v in node:
            yield from _colours(v, key, colour)


def palette_violations(spec: Mapping[str, Any]) -> list[str]:
    """The colours a chart's spec names that are neither Okabe-Ito's nor a neutral grey, in order, once each
    (a named scheme counts as one: its colours are not Okabe-Ito's)."""
    allowed = {c.lower() for c in OKABE_ITO} | NEUTRALS
    return list(dict.fromkeys(c for c in _colours(dict(spec)) if c.lower() not in allowed))


# The text sizes of Vega-Lite's defaults, stated so that a chart drawn for print can scale them all: (config
# section, property, size in px); label limits scale with them, else longer text would be cut short.
PRINT_TEXT = (("axis", "labelFontSize", 10), ("axis", "titleFontSize", 11), ("axis", "labelLimit", 180),
              ("legend", "labelFontSize", 10), ("legend", "titleFontSize", 11), ("legend", "labelLimit", 160),
              ("legend", "titleLimit", 180), ("header", "labelFontSize", 10), ("header", "titleFontSize", 11),
              ("title", "fontSize", 13), ("title", "subtitleFontSize", 10), ("text", "fontSize", 11))
PRINT_MARGIN_PT = 0.1   # drawn a little above the minimum: LaTeX's widths are rounded to its scaled points
PRINT_TRIES = 6         # enlarging text widens the chart (labels, legends): the factor is found by iteration
# Text enlarged further would crowd the plot it labels; a chart that needs more is too wide for its print (or its
# width is its title's, which grows with the text) and wants a narrower spec or a wider print: the check says which.
PRINT_MAX_FACTOR = 2.0

_printed_widths: dict[str, float] = {}


@contextmanager
def printed_at(widths: Mapping[str, float]) -> Iterator[None]:
    """Within the block, `save` draws each chart named in `widths` (figure name -> printed width in points,
    printsize.figure_widths) for that width."""
    before = dict(_printed_widths)
    _printed_widths.clear()
    _printed_widths.update(widths)
    try:
        yield
    finally:
        _printed_widths.clear()
        _printed_widths.update(before)


def with_text_scaled(spec: Mapping[str, Any], factor: float) -> dict[str, Any]:
    """The spec with every default text size (PRINT_TEXT) times `factor`, rounded up to a tenth of a pixel."""
    import math

    out = copy.deepcopy(dict(spec))
    config = out.setdefault("config", {})
    for section, prop, size in PRINT_TEXT:
        config.setdefault(section, {})[prop] = math.ceil(size * factor * 10) / 10
    return out


def for_print(spec: Mapping[str, Any], printed_pt: float, minimum: float = printsize.MINIMUM_PT
              ) -> tuple[dict[str, Any], str]:
    """(spec, SVG) of the chart drawn so that, printed `printed_pt` wide, its smallest text is at least `minimum`
    points: a chart drawn W px wide prints its text at printed_pt / W of its size, so the text is enlarged, redrawn
    (the chart widens with it) and measured again. Text the chart sizes itself is not enlarged: the check of the
    built paper names such a chart."""
    import vl_convert as vlc

    target, factor, out = minimum + PRINT_MARGIN_PT, 1.0, dict(spec)
    svg = vlc.vegalite_to_svg(out)
    seen: list[tuple[float, float]] = []        # (text factor, drawn width) of each drawing too small
    for _ in range(PRINT_TRIES):
        drawn, smallest = printsize.svg_text_of(svg)
        if smallest * printed_pt / drawn >= target:
            break
        seen.append((factor, drawn))
        factor = min(_next_factor(seen, smallest / factor, printed_pt, target), PRINT_MAX_FACTOR)
        if factor == seen[-1][0]:
            break
        out = with_text_scaled(spec, factor)
        svg = vlc.vegalite_to_svg(out)
    return out, svg


def _next_factor(seen: list[tuple[float, float]], smallest_px: float, printed_pt: float, target: float) -> float:
    """The text factor at which the smallest text (`smallest_px` at factor 1) prints at `target` points. The drawn
    width grows about linearly with the factor (the plots keep their size; labels, titles and legends grow), so from
    the last two drawings width = fixed + slope × factor is solved for it; from one, the factor that would do if the
    width stayed. A little over (1 %), so that the next drawing is not just short of it."""
    factor, drawn = seen[-1]
    guess = target * drawn / (smallest_px * printed_pt)
    if len(seen) >= 2 and seen[-1][0] != seen[-2][0]:
        (k0, w0), (k1, w1) = seen[-2], seen[-1]
        slope = (w1 - w0) / (k1 - k0)
        fixed, room = w1 - slope * k1, smallest_px * printed_pt - target * slope
        if room > 0 and fixed > 0:
            guess = target * fixed / room
    return max(guess, factor) * 1.01


def save(chart: alt.TopLevelMixin, name: str, directory: Path | None = None) -> list[Path]:
    """Write `name`.pdf and `name`.svg (static, for LaTeX and the web) with vl-convert; drawn for its printed width
    within `printed_at`. Raises FigureError when the chart names a colour outside the palette or draws a legend
    twice."""
    import vl_convert as vlc

    directory = directory or paths.FIGURES_DIR
    spec = chart.to_dict()
    wrong = palette_violations(spec)
    if wrong:
        raise FigureError(f"figure {name}: colours outside the colour-blind-safe palette (Okabe-Ito or grey): "
                          + ", ".join(wrong))
    if name in _printed_widths:
        spec, svg = for_print(spec, _printed_widths[name])
    else:
        svg = vlc.vegalite_to_svg(spec)
    if twice := duplicate_legends(svg):
        raise FigureError(f"figure {name}: legend drawn twice: {', '.join(twice)} (figures.series draws one)")
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for ext, data in (("pdf", vlc.vegalite_to_pdf(spec)), ("svg", svg)):
        path = directory / f"{name}.{ext}"
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
