"""Traceability: the code behind each figure and table is recorded while it is written, and the paper must name it."""
import sys
import types

import altair as alt
import pandas as pd
import pytest

from snaptax.paper import figures, macros, sources


def fake_present(tmp_path):
    mod = types.ModuleType("snaptax_fake_present")
    src = '''
import altair as alt
import pandas as pd
from snaptax.paper import figures, macros

def _helper():
    return alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q")

def a_chart(a):
    _helper()
    return _helper().properties(title="a")

def a_tex(a):
    return macros.render_table(["h"], [["1"]])

def write(a, figure_dir, generated_dir):
    figures.save(a_chart(a), "fake-a", figure_dir)
    macros.write_table("fake-t", a_tex(a), generated_dir)
'''
    exec(compile(src, "fake_present.py", "exec"), mod.__dict__)
    for fn in vars(mod).values():
        if isinstance(fn, types.FunctionType):
            fn.__module__ = mod.__name__
    sys.modules[mod.__name__] = mod
    return mod


def test_tracing_names_the_function_that_made_each_output(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "save", lambda chart, name, directory=None: [])
    mod = fake_present(tmp_path)
    save, table, chart_fn = figures.save, macros.write_table, mod.a_chart
    with sources.tracing(mod, "notebooks/09_fake.ipynb") as made:
        mod.write(None, tmp_path / "fig", tmp_path / "gen")
    assert made["fake-a"].function == "snaptax_fake_present.a_chart"
    assert made["fake-t"].function == "snaptax_fake_present.a_tex"
    assert made["fake-a"].notebook == "notebooks/09_fake.ipynb"
    assert (tmp_path / "gen" / "fake-t.tex").is_file()
    # everything is restored afterwards
    assert (figures.save, macros.write_table, mod.a_chart) == (save, table, chart_fn)


def test_sources_tex_defines_coderef():
    tex = sources.sources_tex([sources.Source("f-1", "snaptax.studies.x.present.f_chart", "notebooks/01_x.ipynb")])
    assert "\\DeclareRobustCommand{\\coderef}" in tex
    # names may break after dots and underscores (macros.breakable)
    assert "snaptax@src@f-1" in tex and "01\\_x.ipynb" in tex and "f\\_\\allowbreak{}chart" in tex


PAPER = r"""
\begin{figure}[H]
\includegraphics[width=0.5\linewidth]{fig-a}\hfill\includegraphics{fig-b}
\caption{Two. \coderef{fig-a} \coderef{fig-b}}
\end{figure}
% \begin{figure}\includegraphics{commented-out}\caption{x}\end{figure}
\begin{table}[H]
\input{generated/tab-a}
\caption{A table. \coderef{tab-a}}
\end{table}
\input{generated/tab-long}
\begin{longtable}{ll}
\caption{A long table. \coderef{tab-long}}\\
\snaptaxtable{tab-long}
\end{longtable}
"""


def test_check_sources(tmp_path):
    known = {n: sources.Source(n, "m.f") for n in ("fig-a", "fig-b", "tab-a", "tab-long")}
    p = tmp_path / "s.tex"
    p.write_text(PAPER)
    sources.check_sources([p], known)
    p.write_text(PAPER.replace(r" \coderef{fig-b}", ""))
    with pytest.raises(sources.MissingSource, match="figure 'fig-b' names no source"):
        sources.check_sources([p], known)
    p.write_text(PAPER.replace(r" \coderef{tab-long}", ""))
    with pytest.raises(sources.MissingSource, match="longtable 'tab-long' names no source"):
        sources.check_sources([p], known)
    p.write_text(PAPER + r"\coderef{nothing}")
    with pytest.raises(sources.MissingSource, match="names no figure or table"):
        sources.check_sources([p], known)


def test_the_body_names_no_code_but_shows_only_what_the_supplement_sources(tmp_path):
    """The body's captions say what to see: a figure there needs no \\coderef when the supplement shows it with
    one, and is refused when the supplement does not."""
    known = {n: sources.Source(n, "m.f") for n in ("fig-a", "fig-b", "tab-a", "tab-long")}
    supplement = tmp_path / "s.tex"
    supplement.write_text(PAPER)
    body = tmp_path / sources.BODY
    body.write_text("\\begin{figure*}\\includegraphics{fig-a}\\caption{Look at the drop.}\\end{figure*}\n")
    sources.check_sources([body, supplement], known)
    supplement.write_text(PAPER.replace(r" \coderef{fig-a}", ""))
    with pytest.raises(sources.MissingSource, match="s.tex: figure 'fig-a' names no source"):
        sources.check_sources([body, supplement], known)
    with pytest.raises(sources.MissingSource, match="snaptax.tex: figure 'fig-a' is shown by no supplement figure"):
        sources.check_sources([body], known)


def test_is_chart():
    assert sources._is_chart(alt.Chart(pd.DataFrame({"x": [1]})).mark_point())
    assert not sources._is_chart("text")
