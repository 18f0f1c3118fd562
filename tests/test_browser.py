"""snaptax.browser: which requests stay on this machine; and, in Debian's headless Chromium, every committed notebook
opened in JupyterLab draws each of its charts (an SVG with marks), without a Vega version warning, and no request
leaves the machine."""
import json
import shutil
import time

import nbformat
import pytest

from snaptax import browser, paths
from snaptax.paper import figures
from tests.jupyterlab import jupyterlab, processes_naming

NOTEBOOKS = sorted((paths.REPO_ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("url,local", [
    ("http://127.0.0.1:8888/lab", True), ("http://localhost/x", True), ("ws://[::1]:1/api", True),
    ("data:image/png;base64,AAAA", True), ("blob:http://127.0.0.1:1/uuid", True), ("about:blank", True),
    ("file:///tmp/site/index.html", True),
    ("https://cdn.jsdelivr.net/npm/vega@5", False), ("http://127.0.0.2/", True),
    ("https://localhost.example.com/", False), ("http://10.0.0.1/", False), ("wss://jupyterlab.github.io/", False),
])
def test_what_stays_on_this_machine(url, local):
    assert browser.is_local(url) is local


def charts_in(path) -> int:
    nb = nbformat.read(path, as_version=4)
    return sum(figures.NOTEBOOK_MIMETYPE in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


# Per chart of the notebook shown: whether it was drawn as SVG, and how many data marks (not axes or legends) it has.
CHARTS = """(() => {
  const charts = [...document.querySelectorAll('.jp-NotebookPanel .jp-RenderedVega5')];
  return charts.map(c => ({svg: !!c.querySelector('svg.marks'),
                           marks: c.querySelectorAll('svg.marks g.role-mark > *').length}));
})()"""


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (make setup installs it)")
def test_jupyterlab_draws_every_chart_offline_without_version_warnings(tmp_path):
    t0 = time.monotonic()
    expected = {p.name: charts_in(p) for p in NOTEBOOKS}
    assert sum(expected.values()) >= len(NOTEBOOKS)
    served = tmp_path / "served" / "notebooks"         # copies: the lab writes checkpoints of what it opens
    served.mkdir(parents=True)
    for p in NOTEBOOKS:
        shutil.copy(p, served / p.name)
    drawn = {}
    with jupyterlab(served.parent, tmp_path / "lab") as lab, browser.Browser(timeout_s=60) as chromium:
        for path in NOTEBOOKS:
            page = chromium.page(lab.tree(f"notebooks/{path.name}"))
            want = expected[path.name]
            charts = page.wait_for(f"(() => {{ const c = {CHARTS}; return c.length === {want} && "
                                   f"c.every(x => x.marks > 0) ? c : null }})()", timeout_s=60)
            drawn[path.name] = charts
            page.close()
        requests, blocked, console = list(chromium.requests), list(chromium.blocked), list(chromium.console)
    assert drawn.keys() == expected.keys() and all(all(c["svg"] for c in v) for v in drawn.values())
    assert any(lab.url in r for r in requests) and blocked == [], f"requests that would leave the machine: {blocked}"
    vega = [e for e in console if "vega" in e.text.lower() or "spec" in e.text.lower()]
    assert vega == [], vega
    assert processes_naming(str(lab.runtime)) == [], "a kernel of the lab outlived it"
    print(f"{sum(expected.values())} charts in {len(NOTEBOOKS)} notebooks drawn in {time.monotonic() - t0:.0f} s; "
          f"console: {json.dumps([e.text[:120] for e in console])}")


PAGE = b"""<!doctype html><title>t</title><img src="https://example.com/logo.png">
<script>
  fetch("http://10.1.2.3/data.json").catch(() => {});
  try { new WebSocket("wss://example.org/socket"); } catch (e) {}
  fetch("/local.json").then(r => r.json()).then(j => { document.title = "local " + j.ok; });
  console.warn("a warning the page logs");
</script>"""


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="needs chromium (make setup installs it)")
def test_requests_for_other_hosts_are_blocked_and_recorded():
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = PAGE if self.path == "/" else b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if self.path == "/" else "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with browser.Browser() as chromium:
            page = chromium.page(f"http://127.0.0.1:{server.server_port}/")
            assert page.wait_for("document.title === 'local true' && document.title", timeout_s=20)
            time.sleep(0.5)
            blocked, requests, console = set(chromium.blocked), chromium.requests, chromium.console
    finally:
        server.shutdown()
    assert blocked == {"https://example.com/logo.png", "http://10.1.2.3/data.json", "wss://example.org/socket"}
    assert f"http://127.0.0.1:{server.server_port}/local.json" in requests
    assert browser.ConsoleEntry("warning", "a warning the page logs") in console
