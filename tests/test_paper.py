"""The paper as a whole: its sections in order, and every figure and table naming the code that made it."""
import re

from snaptax import paths, sources

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
