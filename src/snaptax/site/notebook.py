"""A committed study notebook as a page of the site, by nbconvert (its lab template, extended by
templates/snaptax-notebook.html.j2): the notebook as it was committed, outputs included, never executed. Its charts
(Vega 5 specs, snaptax.paper.figures.NOTEBOOK_MIMETYPE) are drawn interactive in the page by the vendored Vega; the
PNG each chart carries is shown until then. Nothing in the page comes from a CDN."""
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


def charts(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """The Vega specs of a notebook's chart outputs, in order."""
    return [o["data"][NOTEBOOK_MIMETYPE] for c in nb.cells for o in c.get("outputs", [])
            if NOTEBOOK_MIMETYPE in o.get("data", {})]


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
