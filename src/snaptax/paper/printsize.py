"""How large the paper's smallest text prints: every figure's and every scaled table's, from the LaTeX log.

A chart is drawn at its own size (vl-convert: one SVG pixel is one PDF point) and LaTeX scales it to the width a
section gives it; a generated table wider than the text is scaled down to it (\\fitwidth). What a reader sees is the
drawn size times that scale, so neither the chart's spec nor the TeX source alone can say whether a label is
legible. The preamble of each document makes LaTeX write, for every figure, every \\fitwidth and every generated
longtable (never scaled: reported with natural width 0, so it prints at its font size), a line to its log
(PRINT_TAG, see paper/snaptax.tex's \\includegraphics hook): the figure's name and printed width, or the table's
natural width, the line width and its font size. `smallest` reads those lines with each figure's SVG (its width and
its text's font sizes) and gives every figure or table whose smallest text prints below `minimum` points (issue 50:
7 pt). Before LaTeX runs, `figure_widths` reads from the documents' sources the width each figure will print at, so
that a chart can be drawn for it (figures.printed_at).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..errors import SnaptaxError

PRINT_TAG = "snaptax-print:"
MINIMUM_PT = 7.0        # the smallest text a printed page may carry (issue 50)
TEX_LOG_WIDTH = 79      # TeX Live's max_print_line: the log's lines are wrapped after so many characters

_FIGURE_RE = re.compile(rf"^{re.escape(PRINT_TAG)} figure (\S+) width=([\d.]+)pt", re.M)
_TABLE_RE = re.compile(rf"^{re.escape(PRINT_TAG)} table line=(\d+) natural=([\d.]+)pt linewidth=([\d.]+)pt "
                       r"size=([\d.]+)", re.M)
_PX_RE = re.compile(r"^\s*([\d.]+)\s*(px)?\s*$")


class PrintSizeError(SnaptaxError):
    """A figure or table of the paper prints text below the legible minimum, or cannot be measured."""


@dataclass(frozen=True)
class Printed:
    """One figure or scaled table as printed: `what` names it, `smallest_pt` is its smallest text on paper."""

    what: str
    smallest_pt: float


def svg_text(svg: Path) -> tuple[float, float]:
    """(drawn width, smallest font size) of a chart's SVG, both in SVG pixels (a chart without text: inf)."""
    try:
        text = Path(svg).read_text()
    except OSError as exc:
        raise PrintSizeError(f"{svg}: not a readable SVG ({exc})") from None
    return svg_text_of(text, str(svg))


def svg_text_of(text: str, where: str = "SVG") -> tuple[float, float]:
    """svg_text of an SVG document held in memory (`where` names it in an error)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise PrintSizeError(f"{where}: not a readable SVG ({exc})") from None
    width = _PX_RE.match(root.get("width", ""))
    if width is None:
        raise PrintSizeError(f"{where}: the SVG has no width in pixels")
    sizes = []
    for el in root.iter():
        size = el.get("font-size") or _style_font_size(el.get("style", ""))
        if size and (m := _PX_RE.match(size)):
            sizes.append(float(m.group(1)))
    return float(width.group(1)), min(sizes, default=float("inf"))


def _style_font_size(style: str) -> str | None:
    m = re.search(r"font-size:\s*([\d.]+px)", style)
    return m.group(1) if m else None


def unwrapped(log: str, width: int = TEX_LOG_WIDTH) -> str:
    """The log with TeX's line wrapping undone: TeX breaks a line it writes to the log after `width` characters
    (max_print_line), so a report line of exactly that length continues on the next."""
    out: list[str] = []
    lines = log.split("\n")
    for line in lines:
        if out and len(out[-1]) == width and out[-1].startswith(PRINT_TAG):
            out[-1] += line
        else:
            out.append(line)
    return "\n".join(out)


def printed(log: str, figures_dir: Path) -> list[Printed]:
    """Every figure and scaled table the log reports, with its smallest text in points as printed."""
    log = unwrapped(log)
    out = []
    for name, width in _FIGURE_RE.findall(log):
        svg = figures_dir / f"{Path(name).stem}.svg"
        if not svg.is_file():
            raise PrintSizeError(f"{svg}: no SVG beside the figure {name!r} to measure its text")
        drawn, smallest = svg_text(svg)
        out.append(Printed(f"figure {Path(name).stem}", smallest * float(width) / drawn))
    for line, natural, linewidth, size in _TABLE_RE.findall(log):
        scale = min(1.0, float(linewidth) / float(natural)) if float(natural) > 0 else 1.0
        out.append(Printed(f"table at line {line}", float(size) * scale))
    return out


def smallest(log: str, figures_dir: Path, minimum: float = MINIMUM_PT) -> list[Printed]:
    """The figures and tables whose smallest text prints below `minimum` points, smallest first."""
    return sorted((p for p in printed(log, figures_dir) if p.smallest_pt < minimum), key=lambda p: p.smallest_pt)


def check(log_path: Path, figures_dir: Path, minimum: float = MINIMUM_PT) -> list[Printed]:
    """Raise PrintSizeError (one line: how many, the smallest) if a figure or table prints text below `minimum`;
    return what the log reports. A log without a single report is an error: the preamble's hook is missing."""
    try:
        log = Path(log_path).read_text(errors="replace")
    except OSError:
        raise PrintSizeError(f"{log_path}: no LaTeX log (was the paper built?)") from None
    found = printed(log, figures_dir)
    if not found:
        raise PrintSizeError(f"{log_path}: no '{PRINT_TAG}' lines (the document's preamble lacks the print-size hook)")
    small = smallest(log, figures_dir, minimum)
    if small:
        worst = small[0]
        raise PrintSizeError(f"{log_path}: {len(small)} of {len(found)} figures and tables print text below "
                             f"{minimum:g} pt; the smallest: {worst.what} at {worst.smallest_pt:.1f} pt")
    return found


# The widths a figure's \includegraphics may name, in points, per document: the body (snaptax.tex: two columns, 10 pt,
# A4 with 1.9 cm margins and a 0.6 cm gap) and the supplement (one column, 11 pt, 2.3 cm margins), as their logs
# report them. The charts' text is drawn for these widths before LaTeX runs (figures.printed_at); the check of the
# built logs above stays the authority, so a changed layout that these numbers miss fails there, by name.
LINE_WIDTHS_PT = {
    "snaptax.tex": {"textwidth": 489.38776, "columnwidth": 236.15806, "linewidth": 236.15806},
    "supplement.tex": {"textwidth": 466.62503, "columnwidth": 466.62503, "linewidth": 466.62503},
}
_INCLUDE_RE = re.compile(r"\\includegraphics\[width=([\d.]*)\\(textwidth|columnwidth|linewidth)\]\{([^}]+)\}")
_SECTION_RE = re.compile(r"^\\input\{(sections/[^}]+)\}", re.M)
_COMMENT_RE = re.compile(r"(?<!\\)%.*")


def figure_widths(paper_dir: Path) -> dict[str, float]:
    """Each figure's printed width in points, the narrowest where both documents show it: from every
    `\\includegraphics[width=<fraction>\\textwidth|\\columnwidth|\\linewidth]{name}` of a document and the sections
    it inputs. In the two-column body a \\linewidth counts as a column's (the narrower: a float across both columns
    names \\textwidth). A figure included otherwise has no entry."""
    out: dict[str, float] = {}
    for doc, widths in LINE_WIDTHS_PT.items():
        main = paper_dir / doc
        if not main.is_file():
            continue
        text = main.read_text(errors="replace")
        files = [text] + [(paper_dir / f"{s}.tex").read_text(errors="replace")
                          for s in _SECTION_RE.findall(text) if (paper_dir / f"{s}.tex").is_file()]
        for tex in files:
            for fraction, unit, name in _INCLUDE_RE.findall(_COMMENT_RE.sub("", tex)):
                width = (float(fraction) if fraction else 1.0) * widths[unit]
                stem = Path(name).stem
                out[stem] = min(out.get(stem, width), width)
    return out


__all__ = ["PRINT_TAG", "MINIMUM_PT", "TEX_LOG_WIDTH", "LINE_WIDTHS_PT", "PrintSizeError", "Printed", "svg_text",
           "svg_text_of", "unwrapped", "printed", "smallest", "check", "figure_widths"]
