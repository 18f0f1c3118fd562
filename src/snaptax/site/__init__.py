"""The interactive offline companion site (`snaptax site`, `make site`) -> build/site/index.html.

Made from what is committed, measuring and executing nothing: the study notebooks as committed (with their
outputs; nbconvert turns each into a page), the claims table of the newest runs under data/ (snaptax.claimstable,
the rows `make claims` prints) and the held-out tests of their models (snaptax.paper.heldout, the rows of the paper's
table of models). Pages: index.html (what the site is, the seeds, the verdicts per seed, the notebooks),
seeds/<id>.html for each seed (its claims rows, the notebooks that serve it and their charts, the held-out tests of
those studies' models, its stand-ins) and notebooks/NN_<study>.html for each notebook. Every chart is a Vega 5 spec
drawn interactive by the Vega vendored in assets/ (tools/site-js.txt): nothing is fetched when the site is built or
viewed, and every link is relative, so the site works opened from disk (file://) as from a local web server.

The site is built beside its destination and put in its place whole: a failed build leaves the old site as it was.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import claimstable, paths, profiles, seeds
from ..claimstable import Row
from ..paper import heldout
from ..paper.heldout import ModelRow
from ..record import RunRef
from ..values import DerivedValues
from . import assets as assetsmod, notebook as nbmod, pages


@dataclass(frozen=True)
class Site:
    """A built site: its root, every page (relative to it), how many charts they show (a notebook's chart counts on
    its page and on each seed page that shows it again), and how many claims rows and models' held-out tests it was
    built from."""

    root: Path
    pages: tuple[str, ...]
    charts: int
    rows: int
    models: int

    @property
    def index(self) -> Path:
        return self.root / "index.html"


def notebooks(directory: Path | None = None) -> list[nbmod.Notebook]:
    """The study notebooks, notebooks/NN_<study>.ipynb, in order."""
    return [nbmod.Notebook(p) for p in sorted((directory or paths.NOTEBOOKS_DIR).glob("[0-9]*_*.ipynb"))]


def seed_links(rows: Sequence[Row], nbs: Sequence[nbmod.Notebook]) -> list[pages.SeedLinks]:
    """Each seed with the notebooks that serve it: the studies snaptax.seeds names for it and those whose claims
    rows test it."""
    by_study = {nb.study: nb for nb in nbs}
    out = []
    for s in seeds.SEEDS:
        studies = list(dict.fromkeys([*s.studies, *(r.study for r in rows if r.outcome.claim.seed == s.id)]))
        out.append(pages.SeedLinks(s, tuple((st, by_study[st].page) for st in studies if st in by_study),
                                   tuple(st for st in studies if st not in by_study)))
    return out


def models_of(runs: Sequence[tuple[RunRef, DerivedValues]]) -> list[ModelRow]:
    """The models' held-out tests in the runs' derived values (claimstable.newest), as the paper's table of models has
    them: the runs' values merged (every key starts with its study's id)."""
    return heldout.rows({k: v for _, d in runs for k, v in d.values.items()})


def build(out: Path | None = None, rig: str = "local", profile: str = profiles.DEFAULT,
          rows: Sequence[Row] | None = None, notebook_dir: Path | None = None,
          vendored: Path | None = None, models: Sequence[ModelRow] | None = None) -> Site:
    """Build the site into `out` (default build/site). `rows` are the claims rows to show and `models` the models'
    held-out tests (default: those of the newest `profile` runs on `rig`, claimstable.rows and paper.heldout.rows);
    SiteError if a vendored file is missing or a chart was made for another Vega than the vendored one,
    studies.NoPublishedRun if a study has no run."""
    out = Path(out or paths.SITE_DIR)
    nbs = notebooks(notebook_dir)
    read = {nb: nb.read() for nb in nbs}
    found = assetsmod.pins()
    assetsmod.check_vega({str(nb.path.name): {str(c.get("$schema", "")) for c in nbmod.charts(doc)}
                          for nb, doc in read.items()}, found["vega"])
    runs = claimstable.newest(rig, profile) if rows is None or models is None else []     # read once for both
    rows = list(claimstable.rows(rig, profile, runs) if rows is None else rows)
    models = list(models_of(runs) if models is None else models)
    links = seed_links(rows, nbs)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    staging.chmod(0o755)                            # mkdtemp's is the owner's alone; a web server reads the site
    try:
        site = _write(staging, rows, models, links, read, rig, profile, vendored)
        old = out.with_name(f".{out.name}-old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        staging.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Site(out, site.pages, site.charts, site.rows, site.models)


def _write(root: Path, rows: list[Row], models: list[ModelRow], links: list[pages.SeedLinks], read: dict, rig: str,
           profile: str, vendored: Path | None) -> Site:
    assets = assetsmod.copy(root, vendored)
    written: list[str] = []
    charts = 0

    def page(name: str, title: str, body: str) -> None:
        nonlocal charts
        up = "../" * name.count("/")
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(pages.document(title, body, assets.at(up), pages.nav(up, links, name)))
        charts += body.count('class="snaptax-chart"')
        written.append(name)

    served = {nb.study: [s.seed.id for s in links if any(st == nb.study for st, _ in s.notebooks)] for nb in read}
    page("index.html", "snaptax: the companion site",
         pages.index_body(rows, links, [(nb.study, nb.page, served[nb.study]) for nb in read], rig, profile,
                          assets.versions))
    figures = {nb.study: nbmod.figures(doc) for nb, doc in read.items()}
    for link in links:
        page(link.page, f"snaptax: {pages.seed_title(link.seed)}", pages.seed_body(link, rows, figures, models))
    exporter = nbmod.exporter()
    for nb, doc in read.items():
        up = "../" * nb.page.count("/")
        nbmod.write(doc, f"snaptax: notebook {nb.path.stem}", root / nb.page, assets.at(up),
                    pages.nav(up, links, nb.page), exporter)
        charts += len(nbmod.charts(doc))
        written.append(nb.page)
    return Site(root, tuple(written), charts, len(rows), len(models))


__all__ = ["Site", "build", "models_of", "notebooks", "seed_links"]
