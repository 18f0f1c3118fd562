"""The paper as a whole: its sections in order, and every figure and table naming the code that made it."""
import re
import unicodedata

import pytest

from snaptax import derived, paths, studies
from snaptax.paper import sources
from snaptax.record import published_runs

SECTIONS = ["intro", "related", "method", "seed001", "calibration", "engines", "memory_dump", "claims",
            "discussion", "threats", "conclusion"]
APPENDIX = ["artifact", "reproducibility"]


def inputs(tex: str) -> list[str]:
    return re.findall(r"^\\input\{sections/([^}]*)\}", tex, re.M)


def test_section_list():
    tex = (paths.PAPER_DIR / "snaptax.tex").read_text()
    body, _, appendix = tex.partition("\\appendix")
    got = inputs(body)
    # other sections (a new study's) may sit between the studies; the frame is fixed
    assert [s for s in got if s in SECTIONS] == SECTIONS
    assert inputs(appendix) == APPENDIX
    assert "\\begin{abstract}" in tex and "\\input{generated/sources}" in tex
    for name in got + inputs(appendix):
        assert (paths.PAPER_DIR / "sections" / f"{name}.tex").is_file()


def test_every_figure_and_table_names_its_source():
    files = sorted((paths.PAPER_DIR / "sections").glob("*.tex"))
    shown = 0
    for f in files:
        for kind, items, refs in sources.shown(f.read_text()):
            for item in items:
                assert item in refs, f"{f.name}: {kind} {item} has no \\coderef"
                shown += 1
    assert shown >= 20


def test_results_at_a_glance_is_near_the_front():
    intro = (paths.PAPER_DIR / "sections" / "intro.tex").read_text()
    assert "\\input{generated/glance}" in intro and "\\coderef{glance}" in intro


@pytest.mark.committed
def test_every_character_of_the_committed_claims_typesets(monkeypatch):
    """A claim's words go into the paper as they are: each character beyond Latin-1 (which pdfLaTeX's utf8 input
    knows) must be declared in snaptax.tex, or the build stops at it."""
    monkeypatch.delenv("SNAPTAX_DATA_DIR", raising=False)    # the checkout's data/, even inside make test
    tex = (paths.PAPER_DIR / "snaptax.tex").read_text()
    declared = {chr(int(h, 16)) for h in re.findall(r"\\DeclareUnicodeCharacter\{([0-9A-Fa-f]+)\}", tex)}
    missing: dict[str, str] = {}
    runs = [r for s in studies.REGISTRY for r in published_runs("local", s.id)]
    assert runs
    for run in runs:
        for claim in derived.values_of(run).claims:
            for field in ("statement", "where", "unit", "tolerance_basis", "stand_in", "published_text"):
                for ch in str(claim.get(field, "")):
                    if ord(ch) > 0xFF and ch not in declared:
                        missing[ch] = f"{run.name} {claim['id']}.{field}"
    assert not missing, {f"U+{ord(c):04X} {unicodedata.name(c, '?')}": where for c, where in missing.items()}
