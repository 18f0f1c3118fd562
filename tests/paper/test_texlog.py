"""snaptax.paper.texlog on log excerpts as pdflatex writes them."""
import pytest

from snaptax.paper import texlog

CLEAN = """(./sections/claims.tex
Package pdftex.def Info: figures//x.pdf  used on input line 38.
Underfull \\hbox (badness 10000) in paragraph at lines 28--28
)
Output written on snaptax.pdf (28 pages, 983000 bytes).
"""

BAD = """LaTeX Warning: Reference `tab:claims' on page 3 undefined on input line 12.

LaTeX Warning: Citation `setty2021' on page 1 undefined on input line 4.

Overfull \\hbox (3.33229pt too wide) in paragraph at lines 2--65
 [][]
LaTeX Warning: There were undefined references.
"""


def test_a_clean_log_has_no_problems():
    assert texlog.problems(CLEAN) == []


def test_undefined_references_and_overfull_boxes_are_found():
    found = texlog.problems(BAD)
    assert len(found) == 4 and found[-1].startswith("Overfull \\hbox (3.33229pt")
    assert len(texlog.problems(BAD, overfull=False)) == 3


def test_check_raises_one_line(tmp_path):
    log = tmp_path / "snaptax.log"
    log.write_text(CLEAN)
    texlog.check(log)
    log.write_text(BAD)
    with pytest.raises(texlog.TypesettingError, match=r"Reference `tab:claims'.*\(and 3 more\)$"):
        texlog.check(log)
    with pytest.raises(texlog.TypesettingError, match="no LaTeX log"):
        texlog.check(tmp_path / "missing.log")
