"""The paper side: from the studies' derived values to the files LaTeX reads.

    render.py         `python -m snaptax render`: every study's newest run analysed, values, tables and figures
                      written into paper/generated and paper/figures, the printed values compared and kept
    article.py        the paper's own generated tables and sentences (results at a glance, claims, artifact)
    prose.py          the facts the paper's words state, checked against the values (the prose guard)
    clauses.py        sentences whose wording follows the values (paper.clause.*), held-out verdicts among them
    sources.py        which code made each figure and table (the supplement captions' pointers)
    macros.py         TeX: escaping, numbers as the paper prints them, booktabs tables, values.tex
    figures.py        the palette and the saving of every chart
    printedvalues.py  paper/printed/<rig>-<profile>.tsv: what the paper prints, compared at printed precision
    texlog.py         the LaTeX log read for undefined references and overfull boxes

Every study's present.py uses macros and figures (the tools, which import nothing of the paper's own); the rest
of the paper imports the studies, never the other way round.
"""
