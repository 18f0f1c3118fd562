"""The committed file of what the paper prints: read back as written, rewritten only when a value prints
differently beyond one unit of a last digit, and current for the committed data, whose claims typeset."""
import shutil
import unicodedata

import pytest

from snaptax import paths
from snaptax.paper import printedvalues
from snaptax.values import Value

from .texchars import declared_characters


def test_round_trip_with_tabs_newlines_and_backslashes(tmp_path):
    table = {"s.a": "1.5 [1.0, 2.0]", "s.t": "a\tb\nc \\d", "s.e": ""}
    path = tmp_path / "p.tsv"
    path.write_text(printedvalues.render(table))
    assert printedvalues.read(path) == table
    assert printedvalues.read(tmp_path / "none.tsv") == {}


def test_update_leaves_the_file_alone_at_printed_precision_and_rewrites_a_change(tmp_path):
    path = tmp_path / "p.tsv"
    first = [Value("s.fit", 0.0016407786410004288, "ms", 0.0011, 0.0021, 8, 4), Value("s.word", text="agrees")]
    assert printedvalues.update(path, first) == ["s.fit: new (0.0016 [0.0011, 0.0021])", "s.word: new (agrees)"]
    written = path.stat().st_mtime_ns
    # another host's last bits (and a value on a rounding boundary moving by one unit) leave it as it is
    again = [Value("s.fit", 0.00164077526, "ms", 0.001149999, 0.0021, 8, 4), Value("s.word", text="agrees")]
    assert printedvalues.update(path, again) == [] and path.stat().st_mtime_ns == written
    changed = [Value("s.fit", 0.0019, "ms", 0.0011, 0.0021, 8, 4), Value("s.new", 1.0)]
    diffs = printedvalues.update(path, changed)
    assert diffs == ["s.new: new (1)", "s.word: gone (was agrees)",
                     "s.fit: 0.0016 [0.0011, 0.0021] -> 0.0019 [0.0011, 0.0021] (0.0016 against 0.0019)"]
    assert printedvalues.read(path) == {"s.fit": "0.0019 [0.0011, 0.0021]", "s.new": "1"}


@pytest.mark.committed
@pytest.mark.parametrize("selection", ["quick", "paper"])
def test_the_committed_data_print_what_the_committed_file_says(tmp_path, monkeypatch, selection):
    """`make pdf` on the committed data (the paper's selection of runs, and all quick runs as `make paper` builds),
    without LaTeX: every value the paper can print is what paper/printed/local-<selection>.tsv says (at printed
    precision), so an analysis change must come with a rendered and committed file, and rendering on a clean
    checkout, whatever the host's CPU, leaves the file untouched."""
    from snaptax.paper import render

    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)   # the checkout's data/, even inside make test
    paper = tmp_path / "paper"
    shutil.copytree(paths.PAPER_DIR, paper, ignore=shutil.ignore_patterns("generated", "figures", "*.pdf", "*.aux",
                                                                          "*.log"))
    committed = printedvalues.path_for(paths.PAPER_DIR, "local", selection)
    assert committed.is_file(), f"no committed {committed.name}: run make pdf and commit it"
    result = render.render_all("local", selection, paper_dir=paper)
    assert result.printed_changes == [], (f"{len(result.printed_changes)} printed values differ from {committed.name} "
                                          f"(run make pdf and commit it): {result.printed_changes[:5]}")
    # A claim's words go into the paper as they are: each character beyond Latin-1 (which pdfLaTeX's utf8 input
    # knows) must be declared in supplement.tex (and so in snaptax.tex: test_paper), or the build stops at it. The
    # claims typeset are those of the runs the selection reads, analysed here once (not every committed run again).
    tex = (paths.PAPER_DIR / "supplement.tex").read_text()
    declared = declared_characters(tex)
    missing = {ch: f"{r.run.name} {claim['id']}.{field}" for r in result.studies for claim in r.derived.claims
               for field in ("statement", "where", "unit", "tolerance_basis", "stand_in", "published_text")
               for ch in str(claim.get(field, "")) if ord(ch) > 0xFF and ch not in declared}
    assert not missing, {f"U+{ord(c):04X} {unicodedata.name(c, '?')}": where for c, where in missing.items()}
