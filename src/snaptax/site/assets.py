"""The site's static files, all copied into its assets/ folder so that nothing is fetched when a page is viewed: its
own stylesheet and chart script (package data beside this module), and the JavaScript pinned in tools/site-js.txt
(Vega, Vega-Lite, vega-embed, MathJax), which tools/site-js.sh fetched once into build/site-js/<name>-<version>/.

The notebooks' charts are Vega specs that declare their Vega version ($schema); a chart whose major version is not
the vendored Vega's stops the build (check_vega), so a page never draws a chart with a Vega it was not made for.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import SiteError

STATIC_DIR = Path(__file__).resolve().parent / "static"
ASSETS = "assets"                       # the folder of the site that holds every static file
SCRIPTS = ("vega", "vega-lite", "vega-embed")   # in the order a page loads them (vega-embed needs the other two)
MATHJAX = "mathjax"
SCHEMA = re.compile(r"^https://vega\.github\.io/schema/vega/v(\d+)(?:\.[\d.]+)?\.json$")


@dataclass(frozen=True)
class Pin:
    """One vendored npm package: its exact version, its tarball's integrity, the files taken from it."""

    name: str
    version: str
    integrity: str
    files: tuple[str, ...]

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def main(self) -> str:
        """The file a page loads (the first listed; the others are its licence and provenance)."""
        return self.files[0]


def pins(path: Path | None = None) -> dict[str, Pin]:
    """The pins of tools/site-js.txt by package name (SiteError naming the line if one is malformed)."""
    path = path or paths.SITE_JS_PINS
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) < 4 or not fields[2].startswith("sha512-"):
            raise SiteError(f"{path}:{n}: want 'name version sha512-… file…', got {line.strip()!r}")
        out[fields[0]] = Pin(fields[0], fields[1], fields[2], tuple(fields[3:]))
    missing = [name for name in (*SCRIPTS, MATHJAX) if name not in out]
    if missing:
        raise SiteError(f"{path}: no pin for {', '.join(missing)}")
    return out


@dataclass(frozen=True)
class Assets:
    """Where a site's static files are, relative to its root (a page adds its own way up: Assets.at)."""

    css: str
    charts_js: str
    scripts: tuple[str, ...]        # vega, vega-lite, vega-embed
    mathjax: str
    versions: tuple[tuple[str, str], ...]   # (package, version) of each vendored package

    def at(self, up: str) -> Assets:
        """The same files as seen from a page `up` ('' or '../') below the root."""
        return Assets(up + self.css, up + self.charts_js, tuple(up + s for s in self.scripts), up + self.mathjax,
                      self.versions)


def vega_major(schema: str) -> int | None:
    """The Vega major version a spec's $schema declares (None for a schema that is not Vega's)."""
    m = SCHEMA.match(schema or "")
    return int(m.group(1)) if m else None


def check_vega(schemas: dict[str, set[str]], pin: Pin) -> None:
    """Every chart's $schema (by the file it is in) declares the vendored Vega's major version, else SiteError."""
    want = int(pin.version.split(".")[0])
    wrong = {f"{where}: {s or 'no $schema'}" for where, found in schemas.items() for s in found
             if vega_major(s) != want}
    if wrong:
        raise SiteError(f"charts not made for the vendored Vega {pin.version} ({paths.SITE_JS_PINS.name}): "
                        + "; ".join(sorted(wrong)))


def copy(root: Path, vendored: Path | None = None, pin_file: Path | None = None) -> Assets:
    """Copy the static files into root/assets/ (SiteError naming the first vendored file that is missing)."""
    vendored = vendored or paths.SITE_JS_DIR
    found = pins(pin_file)
    out = root / ASSETS
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(STATIC_DIR.iterdir()):
        shutil.copy2(f, out / f.name)
    for pin in found.values():
        for name in pin.files:
            source = vendored / pin.folder / name
            if not source.is_file():
                raise SiteError(f"{source} is missing: tools/site-js.sh fetches the site's JavaScript "
                                f"({paths.SITE_JS_PINS.name}; make site runs it)")
            (out / pin.folder).mkdir(exist_ok=True)
            shutil.copy2(source, out / pin.folder / Path(name).name)

    def rel(pin: Pin) -> str:
        return f"{ASSETS}/{pin.folder}/{Path(pin.main).name}"

    return Assets(f"{ASSETS}/site.css", f"{ASSETS}/charts.js", tuple(rel(found[n]) for n in SCRIPTS),
                  rel(found[MATHJAX]), tuple((p.name, p.version) for p in found.values()))
