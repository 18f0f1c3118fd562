"""snaptax.site: the offline companion site, built from the committed notebooks and the claims table of the committed
data/ into a temporary directory. Every page is there, every relative link and source resolves to a file of the
site, no page loads a script, stylesheet or image from the network, each seed page holds its claims rows and each
notebook page its charts; and, in Debian's headless Chromium, the pages load from a local web server and from disk,
every chart draws (an SVG with marks in its vega-embed container), and no request leaves the machine."""
from __future__ import annotations

import functools
import http.server
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from snaptax import browser, paths, seeds, site
from snaptax.errors import SiteError
from snaptax.site import assets, notebook

NOTEBOOKS = site.notebooks()
VENDORED = [paths.SITE_JS_DIR / p.folder / f for p in assets.pins().values() for f in p.files]
needs_vendored_js = pytest.mark.skipif(not all(f.is_file() for f in VENDORED),
                                       reason="needs the site's JavaScript in build/site-js (tools/site-js.sh; "
                                              "make setup and make site run it)")
# attributes that make a browser fetch something as the page loads (an <a href> is followed only when clicked)
LOADED = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"),
          ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data"), ("image", "href")}


class Links(HTMLParser):
    """Every URL a page names in an attribute, with its tag; the ids it defines; its charts' containers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.charts = 0
        self.claims = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name in ("src", "href", "data"):
            if a.get(name) is not None:
                self.urls.append((tag, name, a[name] or ""))
        self.ids |= {v for k, v in attrs if k in ("id", "name") and v}
        self.charts += "snaptax-chart" in (a.get("class") or "").split()
        self.claims += tag == "tr" and "data-claim" in a


def parsed(page: Path) -> Links:
    p = Links()
    p.feed(page.read_text())
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The site of the committed notebooks and the newest quick runs of the committed data/ (derived values cached
    in a temporary directory, so nothing is written into the checkout)."""
    tmp = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SNAPTAX_DATA_DIR", raising=False)            # the checkout's data/
        mp.setenv("SNAPTAX_DERIVED_DIR", str(tmp / "derived"))
        t0 = time.monotonic()
        out = site.build(tmp / "site")
        print(f"site built in {time.monotonic() - t0:.1f} s: {len(out.pages)} pages, {out.charts} charts")
    return out


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
