"""snaptax.site: the offline companion site, built from the committed notebooks and the claims table of the committed
data/ into a temporary directory. Every page is there, every relative link and source resolves to a file of the
site, no page loads a script, stylesheet or image from the network, each seed page holds its claims rows, the charts
of the notebooks that serve it and its models' held-out tests, and each notebook page its charts; a seed page says
when no notebook or model serves it (from synthetic pages, without data); and, in Debian's headless Chromium, the
pages load from a local web server and from disk, every chart draws (an SVG with marks in its vega-embed container),
and no request leaves the machine."""
from __future__ import annotations

import functools
import http.server
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from snaptax import browser, claimstable, paths, profiles, seeds, site
from snaptax.errors import SiteError
from snaptax.models import heldout as ho
from snaptax.paper.figures import NOTEBOOK_MIMETYPE
from snaptax.paper.heldout import ModelRow, rows as model_rows
from snaptax.site import assets, notebook, pages
from snaptax.values import Value

NOTEBOOKS = site.notebooks()
VENDORED = [paths.SITE_JS_DIR / p.folder / f for p in assets.pins().values() for f in p.files]
needs_vendored_js = pytest.mark.skipif(not all(f.is_file() for f in VENDORED),
                                       reason="needs the site's JavaScript in build/site-js (tools/site-js.sh; "
                                              "make setup and make site run it)")
# attributes that make a browser fetch something as the page loads (an <a href> is followed only when clicked)
LOADED = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"),
          ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data"), ("image", "href")}


class Links(HTMLParser):
    """Every URL a page names in an attribute, with its tag; the ids it defines; its charts' containers; the charts
    of each notebook it shows (in a figure naming the notebook); its models' rows with their verdicts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.charts = 0
        self.claims = 0
        self.figures: dict[str, int] = {}
        self.models: list[tuple[str, str]] = []       # (study.model, verdict)
        self._notebook = ""            # inside a figure of this notebook's chart
        self._model = False            # inside a model's row ...
        self._verdict = False          # ... and in its verdict's cell

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name in ("src", "href", "data"):
            if a.get(name) is not None:
                self.urls.append((tag, name, a[name] or ""))
        self.ids |= {v for k, v in attrs if k in ("id", "name") and v}
        chart = "snaptax-chart" in (a.get("class") or "").split()
        self.charts += chart
        self.claims += tag == "tr" and "data-claim" in a
        if tag == "figure":
            self._notebook = a.get("data-notebook") or ""
        if chart and self._notebook:
            self.figures[self._notebook] = self.figures.get(self._notebook, 0) + 1
        if tag == "tr" and "data-model" in a:
            self.models.append((a["data-model"] or "", ""))
            self._model = True
        self._verdict = self._model and tag == "td" and "verdict" in (a.get("class") or "").split()

    def handle_endtag(self, tag: str) -> None:
        self._notebook = "" if tag == "figure" else self._notebook
        self._model = self._model and tag != "tr"
        self._verdict = False

    def handle_data(self, data: str) -> None:
        if self._verdict:
            model, verdict = self.models[-1]
            self.models[-1] = (model, verdict + data)


def parsed(page: Path) -> Links:
    p = Links()
    p.feed(page.read_text())
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory, _derived_cache):
    """The site of the committed notebooks and the newest quick runs of the committed data/ (derived values read from
    and cached in the session's temporary directory, tests/conftest.py: the runs another test analysed are not
    analysed again, and nothing is written into the checkout)."""
    tmp = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SNAPTAX_DATA_DIR", raising=False)            # the checkout's data/
        t0 = time.monotonic()
        out = site.build(tmp / "site")
        print(f"site built in {time.monotonic() - t0:.1f} s: {len(out.pages)} pages, {out.charts} charts")
    return out


@pytest.fixture(scope="module")
def shown(built):
    """The claims rows and models' held-out tests the committed site was built from, read back from the derived
    values its build cached (the session's directory)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SNAPTAX_DATA_DIR", raising=False)
        runs = claimstable.newest("local", profiles.DEFAULT)
        return claimstable.rows("local", profiles.DEFAULT, runs), site.models_of(runs)


@pytest.mark.committed
@needs_vendored_js
def test_every_page_is_there_and_every_link_resolves_offline(built):
    root = built.root
    want = {"index.html", *(f"seeds/{s.id}.html" for s in seeds.SEEDS), *(nb.page for nb in NOTEBOOKS)}
    assert set(built.pages) == want and all((root / p).is_file() for p in want)
    assert built.rows > 0 and built.charts >= len(NOTEBOOKS)
    broken, remote = [], []
    for name in built.pages:
        page = root / name
        links = parsed(page)
        for tag, attr, url in links.urls:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") or url.startswith("//"):
                if (tag, attr) in LOADED:
                    remote.append(f"{name}: <{tag} {attr}={url}>")
                continue
            if parts.scheme:                                    # data:, mailto:
                assert parts.scheme in ("data", "mailto"), f"{name}: {url}"
                continue
            if not parts.path:                                  # #fragment: an id of the page itself
                if parts.fragment and parts.fragment not in links.ids:
                    broken.append(f"{name}: {url} (no such id)")
                continue
            target = (page.parent / parts.path).resolve()
            if not target.is_file() or not target.is_relative_to(root.resolve()):
                broken.append(f"{name}: {url}")
    assert remote == [], remote
    assert broken == [], broken


@pytest.mark.committed
@needs_vendored_js
def test_seed_pages_hold_their_claims_and_notebook_pages_their_charts(built):
    per_seed = {s.id: 0 for s in seeds.SEEDS}
    index = parsed(built.index)
    for s in seeds.SEEDS:
        assert any(u == f"seeds/{s.id}.html" for _, _, u in index.urls), s.id
    for s in seeds.SEEDS:
        page = parsed(built.root / f"seeds/{s.id}.html")
        per_seed[s.id] = page.claims
        served = {u for _, _, u in page.urls if u.startswith("../notebooks/")}
        for study in s.studies:
            nb = next((n for n in NOTEBOOKS if n.study == study), None)
            assert nb is None or f"../{nb.page}" in served, (s.id, study)
    assert sum(per_seed.values()) == built.rows
    for nb in NOTEBOOKS:
        page = parsed(built.root / nb.page)
        assert page.charts == len(notebook.charts(nb.read())) > 0, nb.page
    assert index.charts == 1


@pytest.mark.committed
@needs_vendored_js
def test_seed_pages_show_their_notebooks_charts_and_their_models_tests(built, shown):
    rows, models = shown
    charts = {nb.path.stem: len(notebook.charts(nb.read())) for nb in NOTEBOOKS}
    assert built.models == len(models) > 0
    figures = tests = 0
    for link in site.seed_links(rows, NOTEBOOKS):
        page = parsed(built.root / link.page)
        served = [Path(nb_page).stem for _, nb_page in link.notebooks]
        assert page.figures == {nb: charts[nb] for nb in served if charts[nb]}, link.seed.id
        assert page.charts - sum(page.figures.values()) in (0, 1), link.seed.id      # and its ratio chart
        want = [(f"{r.study}.{r.model}", r.text("verdict")) for r in models if r.study in link.studies]
        assert page.models == want, link.seed.id
        assert all(v in (ho.PREDICTS, ho.DESCRIPTIVE) for _, v in want)
        lacking = [st for st in link.studies if st not in {r.study for r in models}]
        said = (built.root / link.page).read_text().count("No model with a held-out test in ")
        assert said == bool(lacking), link.seed.id
        if lacking:
            assert no_model(lacking) in (built.root / link.page).read_text(), link.seed.id
        figures, tests = figures + sum(page.figures.values()), tests + len(want)
    assert figures > 0 and tests > 0


def no_model(studies: list[str]) -> str:
    return f"No model with a held-out test in {'study' if len(studies) == 1 else 'studies'} {', '.join(studies)}."


def served_notebook(charts: int, headings: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    """A notebook with a Markdown cell per heading and then `charts` code cells, each with a chart output."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"## {h}\nWhat to see.") for h in headings]
    for i in range(charts):
        out = nbformat.v4.new_output("display_data", data={NOTEBOOK_MIMETYPE: {"$schema": "v5", "marks": [i]},
                                                           "text/plain": "chart"},
                                     metadata={NOTEBOOK_MIMETYPE: {"embed_options": {"renderer": "canvas"}}})
        nb.cells.append(nbformat.v4.new_code_cell(f"chart({i})", outputs=[out]))
    return nb


def model_tests() -> list[ModelRow]:
    """Two held-out tests of study 'alpha' (one predicts, one has no held-out point) and one of 'gamma'."""
    good = ho.judge([ho.point("p1", 100.0, 99.0, 101.0, 10, 101.0, 100.0, 102.0, 5)], 8, "the dump time")
    none = ho.judge([], 6, "nothing", not_tested="three parameters for three levels")
    values = [Value(f"alpha.after.heldout.ssd.{k}", **q._asdict()) for k, q in good.quoted().items()]
    values += [Value(f"alpha.cost.heldout.{k}", **q._asdict()) for k, q in none.quoted().items()]
    values += [Value(f"gamma.cost.heldout.{k}", **q._asdict()) for k, q in good.quoted().items()]
    return model_rows({v.key: v for v in values})


def test_notebook_figures_carry_their_spec_options_and_heading():
    nb = served_notebook(2, ("The grid",))
    figs = notebook.figures(nb)
    assert [f.spec["marks"] for f in figs] == [[0], [1]] and notebook.charts(nb) == [f.spec for f in figs]
    assert {f.heading for f in figs} == {"The grid"} and figs[0].options == {"renderer": "canvas"}
    assert notebook.figures(served_notebook(1))[0].heading == ""


def test_a_seed_page_shows_each_served_notebooks_charts_and_models_and_says_what_it_lacks():
    seed = seeds.Seed("900", "nobody", "nothing", ("alpha", "beta", "delta"))
    link = pages.SeedLinks(seed, (("alpha", "notebooks/01_alpha.html"), ("beta", "notebooks/02_beta.html")),
                           ("delta",))
    figures = {"alpha": notebook.figures(served_notebook(3, ("Cost",))), "beta": [],
               "gamma": notebook.figures(served_notebook(2))}
    body = pages.seed_body(link, [], figures, model_tests())
    page = Links()
    page.feed(body)
    assert page.figures == {"01_alpha": 3} and page.charts == 3          # gamma's serve no notebook of the seed
    assert sum(u == "../notebooks/01_alpha.html" for _, _, u in page.urls) >= 3     # each caption links to it
    assert "Cost. Chart 2 of 3 of notebook" in body and "This notebook has no chart." in body
    assert page.models == [("alpha.after", "predicts"), ("alpha.cost", "descriptive only")]
    assert "three parameters for three levels" in body and "the dump time" in body
    assert no_model(["beta", "delta"]) in body
    assert {"claims", "figures", "model"} <= page.ids

    alone = pages.SeedLinks(seeds.Seed("901", "nobody", "nothing", ("delta",)), (), ("delta",))
    body = pages.seed_body(alone, [], figures, model_tests())
    page = Links()
    page.feed(body)
    assert page.charts == 0 and page.models == []
    assert "No notebook serving this seed has a chart yet." in body
    assert no_model(["delta"]) in body


def test_a_chart_for_another_vega_or_a_missing_file_stops_the_build(tmp_path):
    vega = assets.pins()["vega"]
    assets.check_vega({"a.ipynb": {"https://vega.github.io/schema/vega/v5.json"}}, vega)
    with pytest.raises(SiteError, match="a.ipynb: https://vega.github.io/schema/vega/v6.json"):
        assets.check_vega({"a.ipynb": {"https://vega.github.io/schema/vega/v6.json"}}, vega)
    with pytest.raises(SiteError, match="no \\$schema"):
        assets.check_vega({"b.ipynb": {""}}, vega)
    with pytest.raises(SiteError, match="is missing: tools/site-js.sh"):
        assets.copy(tmp_path / "site", vendored=tmp_path / "nothing")


# Per chart of the page: drawn (charts.js marks it), and how many data marks its SVG has (not axes or legends).
CHARTS = """(() => [...document.querySelectorAll('.snaptax-chart')].map(c => ({
  drawn: c.classList.contains('snaptax-chart-drawn'),
  marks: c.querySelectorAll('.vega-embed svg.marks g.role-mark > *').length})))()"""


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (make setup installs it)")
@needs_vendored_js
def test_chromium_draws_every_chart_and_nothing_leaves_the_machine(built):
    t0 = time.monotonic()
    root = built.root
    shown = ["index.html", *(f"seeds/{s.id}.html" for s in seeds.SEEDS), NOTEBOOKS[0].page]
    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/"
    drawn = {}
    try:
        with browser.Browser(timeout_s=60) as chromium:
            urls = [(base + name, name) for name in shown] + [((root / name).as_uri(), name)
                                                              for name in ("index.html", NOTEBOOKS[0].page)]
            for url, name in urls:
                want = parsed(root / name).charts
                page = chromium.page(url)
                charts = page.wait_for(f"(() => {{ const c = {CHARTS}; return c.length === {want} && "
                                       "c.every(x => x.drawn && x.marks > 0) ? {charts: c} : null })()",
                                       timeout_s=45)["charts"]
                if name == NOTEBOOKS[0].page and "$" in NOTEBOOKS[0].path.read_text():
                    assert page.wait_for("document.querySelectorAll('mjx-container svg').length", timeout_s=30)
                drawn[url] = charts
                page.close()
            requests, blocked, console = list(chromium.requests), list(chromium.blocked), list(chromium.console)
    finally:
        server.shutdown()
        server.server_close()
    assert blocked == [], f"requests that would leave the machine: {blocked}"
    assert requests and all(browser.is_local(r) for r in requests)
    assert any(r.startswith(base + "assets/vega-5.") for r in requests)
    errors = [e for e in console if e.level != "warning" or "vega" in e.text.lower()]
    assert errors == [], errors
    print(f"{sum(len(c) for c in drawn.values())} charts on {len(drawn)} pages drawn in {time.monotonic() - t0:.0f} s")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
