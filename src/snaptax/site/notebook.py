"""A committed study notebook as a page of the site, by nbconvert (its lab template, extended by
templates/snaptax-notebook.html.j2): the notebook as it was committed, outputs included, never executed. Its charts
(Vega 5 specs, snaptax.paper.figures.NOTEBOOK_MIMETYPE) are drawn interactive in the page by the vendored Vega; the
PNG each chart carries is shown until then. Nothing in the page comes from a CDN. A seed's page shows the charts
of the notebooks that serve it again (`figures`), from the same committed specs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from ..paper.figures import NOTEBOOK_MIMETYPE
from .assets import Assets

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE = "snaptax-notebook.html.j2"


@dataclass(frozen=True)
class Notebook:
    """A study notebook, notebooks/NN_<study>.ipynb, and what the site makes of it."""

    path: Path

    @property
    def study(self) -> str:
        return self.path.stem.split("_", 1)[1] if "_" in self.path.stem else self.path.stem

    @property
    def page(self) -> str:
        """Its page, relative to the site's root."""
        return f"notebooks/{self.path.stem}.html"

    def read(self) -> nbformat.NotebookNode:
        return nbformat.read(self.path, as_version=4)


@dataclass(frozen=True)
class Chart:
    """A chart output of a notebook, as a seed page shows it again: the Vega spec as committed (never redrawn), the
    vega-embed options its output asks for, and the heading of the notebook's section it sits in ('' before any)."""

    spec: dict[str, Any]
    options: dict[str, Any]
    heading: str


def figures(nb: nbformat.NotebookNode) -> list[Chart]:
    """A notebook's chart outputs, in order, each with the nearest Markdown heading above it."""
    out: list[Chart] = []
    heading = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = _heading(cell.source) or heading
        for o in cell.get("outputs", []):
            if NOTEBOOK_MIMETYPE in o.get("data", {}):
                options = o.get("metadata", {}).get(NOTEBOOK_MIMETYPE, {}).get("embed_options", {})
                out.append(Chart(o["data"][NOTEBOOK_MIMETYPE], dict(options), heading))
    return out


def _heading(markdown: str) -> str:
    """The first ATX heading of a Markdown cell, without its #s ('' if it has none)."""
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


def charts(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """The Vega specs of a notebook's chart outputs, in order."""
    return [c.spec for c in figures(nb)]


def exporter() -> Any:
    """nbconvert's HTML exporter with the site's template: a chart's Vega spec preferred to its PNG."""
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    priority = [NOTEBOOK_MIMETYPE, "application/vnd.jupyter.widget-view+json", "text/html", "text/markdown",
                "image/svg+xml", "text/latex", "image/png", "image/jpeg", "text/plain"]
    config = Config({"NbConvertBase": {"display_data_priority": priority}})
    return HTMLExporter(config=config, template_name="lab", template_file=TEMPLATE,
                        extra_template_paths=[str(TEMPLATES_DIR)])


def write(nb: nbformat.NotebookNode, title: str, out: Path, assets: Assets, nav: str, html_exporter: Any) -> None:
    """The page of a notebook at `out` (assets as seen from the page, nav the HTML of its bar of links)."""
    nb = nbformat.from_dict(nb)                     # a copy: the title goes into its metadata
    nb.metadata["title"] = title
    resources = {"site": {"css": assets.css, "charts_js": assets.charts_js, "scripts": list(assets.scripts),
                          "mathjax": assets.mathjax, "nav": nav, "chart_mimetype": NOTEBOOK_MIMETYPE}}
    body, _ = html_exporter.from_notebook_node(nb, resources=resources)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body)
