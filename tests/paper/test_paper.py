"""The paper as a whole: a body of at most 14 two-column pages (snaptax.tex) that refers into its supplement
(supplement.tex, the long document: every section, table and appendix), and every figure and table naming the code
that made it."""
import re

from snaptax import paths
from snaptax.paper import sources

from .texchars import declared_characters

SECTIONS = ["intro", "related", "method", "seed001", "calibration", "engines", "memory_dump", "claims",
            "discussion", "threats", "conclusion"]
APPENDIX = ["artifact", "reproducibility"]
# the body's sections: the frame, and one section per seed in the seeds' order
BODY = ["intro", "method", "seed000", "seed001", "seed002", "seed003", "seed004", "discussion", "threats",
        "conclusion"]


def inputs(tex: str) -> list[str]:
    return re.findall(r"^\\input\{sections/([^}]*)\}", tex, re.M)


def uncommented(tex: str) -> str:
    return "\n".join(re.split(r"(?<!\\)%", line, maxsplit=1)[0] for line in tex.splitlines())


def supplement_labels() -> set[str]:
    files = [paths.PAPER_DIR / "supplement.tex", *sorted((paths.PAPER_DIR / "sections").glob("*.tex"))]
    return {label for f in files for label in re.findall(r"\\label\{([^}]*)\}", uncommented(f.read_text()))}


def test_section_list():
    """The supplement holds every section, as the long document did."""
    tex = (paths.PAPER_DIR / "supplement.tex").read_text()
    body, _, appendix = tex.partition("\\appendix")
    got = inputs(body)
    # other sections (a new study's) may sit between the studies; the frame is fixed
    assert [s for s in got if s in SECTIONS] == SECTIONS
    assert inputs(appendix) == APPENDIX
    assert "\\begin{abstract}" in tex and "\\input{generated/sources}" in tex
    assert "\\input{generated/frontnote}" in tex and "Supplement" in tex
    for name in got + inputs(appendix):
        assert (paths.PAPER_DIR / "sections" / f"{name}.tex").is_file()


def test_the_body_is_a_two_column_paper_that_refers_into_its_supplement():
    tex = uncommented((paths.PAPER_DIR / "snaptax.tex").read_text())
    assert re.search(r"\\documentclass\[[^]]*10pt[^]]*\]\{article\}", tex) and "twocolumn" in tex
    assert not inputs(tex), "the body is self-contained: the sections are the supplement's"
    assert "\\begin{abstract}" in tex and "\\input{generated/values}" in tex and "\\input{generated/sources}" in tex
    # xr-hyper before hyperref, and the supplement's labels under S-
    assert tex.index("\\usepackage{xr-hyper}") < tex.index("{hyperref}")
    assert "\\externaldocument[S-]{supplement}" in tex
    refs = set(re.findall(r"\\ref\{S-([^}]*)\}", tex)) - {"#1"}
    assert refs and refs <= supplement_labels(), refs - supplement_labels()
    # the frame, and one section per seed in the seeds' order
    labels = re.findall(r"\\section\{[^}]*\}\\label\{sec:([^}]*)\}", tex)
    assert labels == BODY
    # one compact table at a glance, before the method
    assert tex.index("\\label{tab:glance}") < tex.index("\\label{sec:method}")
    assert tex.count("\\begin{table") == 1


def test_the_body_and_its_supplement_build_in_order():
    """make pdf (and latexmk alone) build the supplement first: the body reads supplement.aux."""
    rc = (paths.PAPER_DIR / "latexmkrc").read_text()
    assert re.search(r"@default_files\s*=\s*\(\s*'supplement\.tex'\s*,\s*'snaptax\.tex'\s*\)", rc)
    make = (paths.REPO_ROOT / "Makefile").read_text()
    pdf = make[make.index("\npdf:"):make.index("\npaper:")]
    assert "latexmk -pdf -quiet supplement.tex snaptax.tex" in pdf
    assert "texlog paper/supplement.log" in pdf and "texlog paper/snaptax.log" in pdf
    assert "latexmk -C supplement.tex snaptax.tex" in make
    ignored = (paths.REPO_ROOT / ".gitignore").read_text().splitlines()
    assert "paper/snaptax.pdf" in ignored and "paper/supplement.pdf" in ignored


def test_every_figure_and_table_names_its_source():
    """The supplement's captions name the code behind each figure and table; the body's say what to see, and each
    figure the body shows is one the supplement shows with its source."""
    files = [paths.PAPER_DIR / "supplement.tex", *sorted((paths.PAPER_DIR / "sections").glob("*.tex"))]
    shown, named = {}, set()
    for f in files:
        shown[f.name] = 0
        for kind, items, refs in sources.shown(f.read_text()):
            for item in items:
                assert item in refs, f"{f.name}: {kind} {item} has no \\coderef"
                shown[f.name] += 1
                named.add(item)
    assert sum(shown.values()) >= 20
    body = (paths.PAPER_DIR / sources.BODY).read_text()
    in_body = [item for _, items, _ in sources.shown(body) for item in items]
    assert len(in_body) >= 5 and set(in_body) <= named, set(in_body) - named
    assert "\\coderef" not in uncommented(body), "the body's captions say what to see, not where the code lives"


def test_results_at_a_glance_is_near_the_front():
    intro = (paths.PAPER_DIR / "sections" / "intro.tex").read_text()
    assert "\\input{generated/glance}" in intro and "\\coderef{glance}" in intro


def test_both_documents_declare_the_same_characters():
    """The body prints claims' published text too: it declares every character the supplement declares."""
    def declared(name: str) -> set[str]:
        return declared_characters((paths.PAPER_DIR / name).read_text())
    assert declared("supplement.tex") and declared("supplement.tex") <= declared("snaptax.tex")
