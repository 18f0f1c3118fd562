"""The site's own pages: the index (what the site is, the seeds, the notebooks, the verdicts per seed) and one page per
seed (its claims rows as `snaptax claims` gives them: published, ours with its 95 % interval, the verdict; the figures
of the study notebooks that serve it; its models' held-out tests as the paper's table of models has them; its
stand-ins). Every cell comes from the package's own functions (snaptax.claimstable, snaptax.claims, snaptax.seeds,
snaptax.standins, snaptax.paper.heldout); the site's own charts are altair charts compiled to Vega 5 as the
notebooks' are (snaptax.paper.figures.notebook_vega), and the notebooks' charts are their committed Vega specs, all
drawn by the same script. Every link is relative."""
from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import __version__, claims as claimsmod, claimstable, profiles, seeds, standins
from ..claimstable import Row
from ..paper import heldout
from ..paper.heldout import ModelRow
from ..values import format_number
from .assets import Assets
from .notebook import Chart


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def lines(cell: str) -> str:
    """A table cell of several lines (claimstable's cells join them with newlines) as HTML."""
    parts = [p for p in cell.split("\n") if p]
    return "".join(f"<span>{esc(p)}</span>" for p in parts)


@dataclass(frozen=True)
class SeedLinks:
    """What a seed's page links to: the notebooks of the studies that serve it (page paths from the root)."""

    seed: seeds.Seed
    notebooks: tuple[tuple[str, str], ...]      # (study, page) of each study with a notebook
    planned: tuple[str, ...]                    # studies that serve it without a notebook (yet)

    @property
    def page(self) -> str:
        return seed_page(self.seed.id)

    @property
    def studies(self) -> tuple[str, ...]:
        """Every study that serves it, those with a notebook first."""
        return (*(study for study, _ in self.notebooks), *self.planned)


def seed_page(seed_id: str) -> str:
    return f"seeds/{seed_id}.html"


def seed_title(s: seeds.Seed) -> str:
    return f"Seed {s.id} ({s.cite})"


# ---- the frame of every page --------------------------------------------------------------------------------

def document(title: str, body: str, assets: Assets, nav: str) -> str:
    scripts = "\n".join(f'<script src="{esc(s)}"></script>' for s in assets.scripts)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{esc(title)}</title>
<link rel="stylesheet" href="{esc(assets.css)}">
{scripts}
</head>
<body class="snaptax-page">
<nav class="snaptax-nav">{nav}</nav>
<main>
{body}
</main>
<script src="{esc(assets.charts_js)}"></script>
</body>
</html>
"""


def nav(up: str, links: Sequence[SeedLinks], here: str = "") -> str:
    """The bar of links atop every page: the index and each seed (`up` leads from the page to the root)."""
    current = ' aria-current="page"'
    items = [f'<a href="{up}index.html"{current if here == "index.html" else ""}>snaptax companion site</a>']
    items += [f'<a href="{up}{esc(s.page)}"{current if s.page == here else ""}>seed {s.seed.id}</a>' for s in links]
    return " ".join(items)


def chart(spec: dict[str, Any], caption: str, options: Mapping[str, Any] | None = None, source: str = "",
          notebook: str = "") -> str:
    """A chart as the notebook pages have them: its Vega spec in a script tag, drawn by charts.js with vega-embed's
    `options` (default: SVG). A chart of a notebook names it (`notebook`, its file's stem) and ends its caption with
    `source`, the HTML of a link to it."""
    data = json.dumps(spec, ensure_ascii=False).replace("<", "\\u003c")
    embed = esc(json.dumps(dict(options) if options is not None else {"renderer": "svg"}))
    figure = f'<figure data-notebook="{esc(notebook)}">' if notebook else "<figure>"
    return (f'{figure}<div class="snaptax-chart" data-embed-options="{embed}">'
            f'<script type="application/json" class="snaptax-chart-spec">{data}</script></div>'
            f"<figcaption>{esc(caption)}{source}</figcaption></figure>")


def vega(chart_: Any) -> dict[str, Any]:
    """An altair chart as the Vega 5 spec a notebook would show (snaptax.paper.figures)."""
    from ..paper import figures

    return figures.notebook_vega(chart_.to_dict())


# ---- the claims table -------------------------------------------------------------------------------------------

HEADER = ("claim", "statement", "source", "published", "ours [95 % CI]", "ours ÷ published effect", "tolerance",
          "verdict")


def verdict_class(verdict: str) -> str:
    return "verdict verdict-" + verdict.replace(" ", "-")


def claims_table(rows: Sequence[Row]) -> str:
    """The rows as `snaptax claims` gives them, a line naming each run before its rows (claimstable.run_line)."""
    out = ["<table class=\"claims\"><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADER) + "</tr></thead>",
           "<tbody>"]
    last: tuple[str, str] | None = None
    for r in rows:
        o, c = r.outcome, r.outcome.claim
        if (r.study, r.run) != last:
            line = claimstable.run_line(r.study, r.run, r.flagged, r.emulated, c.registration, c.pre_registered)
            out.append(f'<tr class="run"><td colspan="{len(HEADER)}">{esc(line)}</td></tr>')
            last = (r.study, r.run)
        marks = "".join(f'<span class="marks">{esc(m)}</span>' for m in r.marks)
        cells = [f'<td class="cell-lines"><span>{esc(c.seed_label)}</span>{marks}</td>',
                 f"<td>{esc(c.statement)}</td>", f"<td>{esc(c.cite)}, {esc(c.where)}</td>",
                 f'<td class="num">{esc(claimsmod.published_str(c))}</td>',
                 f'<td class="num cell-lines">{lines(claimstable.ours_cell(o))}</td>',
                 f'<td class="num cell-lines">{lines(claimstable.ratio_cell(o))}</td>',
                 f'<td class="num">{esc(claimsmod.tolerance_str(c))}</td>',
                 f'<td class="cell-lines {verdict_class(o.verdict)}">{lines(claimstable.verdict_cell(o))}</td>']
        out.append(f'<tr data-claim="{esc(c.id)}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def legend(rows: Iterable[Row]) -> str:
    present = {m for r in rows for m in r.marks}
    items = [f"<li><b>{esc(m)}</b>: {esc(text)}</li>" for m, text in claimstable.MARKS.items() if m in present]
    return f"<p>Marks:</p><ul>{''.join(items)}</ul>" if items else ""


def tally_table(rows: Sequence[Row], links: Sequence[SeedLinks]) -> str:
    counts = claimstable.tally(list(rows))
    head = "".join(f"<th>{esc(h)}</th>" for h in claimstable.TALLY_HEADER)
    body = []
    for seed, n in counts.items():
        name = ("all seeds" if seed == "all" else
                next((f'<a href="{esc(s.page)}">{esc(seed_title(s.seed))}</a>' for s in links if s.seed.id == seed),
                     esc(seed)))
        body.append(f"<tr><td>{name}</td>" + "".join(f'<td class="num">{n[v]}</td>' for v in claimsmod.VERDICTS)
                    + f'<td class="num">{sum(n.values())}</td></tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# ---- charts ---------------------------------------------------------------------------------------------------

RATIO_DOMAIN = (-2.0, 3.0)      # ours ÷ published effect: the intervals beyond are clamped at the chart's edge


def tally_chart(rows: Sequence[Row]) -> dict[str, Any]:
    """The verdicts of each seed's rows, one stacked bar per seed (a tooltip on each part)."""
    import altair as alt

    data = [{"seed": seed, "verdict": v, "rows": n} for seed, counts in claimstable.tally(list(rows)).items()
            if seed != "all" for v, n in counts.items() if n]
    c = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        y=alt.Y("seed:N", title="seed"), x=alt.X("sum(rows):Q", title="claims rows"),
        color=alt.Color("verdict:N", sort=list(claimsmod.VERDICTS), scale=alt.Scale(domain=list(claimsmod.VERDICTS))),
        order=alt.Order("verdict_order:Q"),
        tooltip=[alt.Tooltip("seed:N"), alt.Tooltip("verdict:N"), alt.Tooltip("sum(rows):Q", title="rows")],
    ).transform_calculate(verdict_order=f"indexof({json.dumps(list(claimsmod.VERDICTS))}, datum.verdict)"
                          ).properties(width=480, height=alt.Step(28))
    return vega(c)


def ratio_chart(rows: Sequence[Row]) -> dict[str, Any] | None:
    """Ours ÷ the published effect with its 95 % interval, one line per row that has one (claims.effect_ratio: 1 the
    published effect, 0 none); None when no row has one (a seed whose claims state only directions)."""
    import altair as alt

    lo, hi = RATIO_DOMAIN
    data, seen = [], set()
    for r in rows:
        ratio = r.outcome.effect_ratio
        if ratio is None:
            continue
        c = r.outcome.claim
        name = f"{c.seed_label}: {c.statement}"
        name = name if len(name) <= 60 else name[:59] + "…"
        k = 2
        while name in seen:
            name, k = f"{name.rsplit(' #', 1)[0]} #{k}", k + 1
        seen.add(name)
        data.append({"row": name, "study": r.study, "statement": c.statement, "verdict": r.outcome.verdict,
                     "ratio": ratio.value, "low": ratio.low if ratio.has_interval else ratio.value,
                     "high": ratio.high if ratio.has_interval else ratio.value,
                     "ours": claimstable.ours_cell(r.outcome).replace("\n", " "),
                     "published": claimsmod.published_str(c)})
    if not data:
        return None
    base = alt.Chart(alt.Data(values=data))
    x = alt.Scale(domain=[lo, hi], clamp=True)
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelLimit=360))
    tooltip = [alt.Tooltip(f) for f in ("statement:N", "study:N", "published:N", "ours:N", "verdict:N")] + \
        [alt.Tooltip("ratio:Q", format=".2f", title="ours ÷ published effect")]
    colour = alt.Color("verdict:N", scale=alt.Scale(domain=list(claimsmod.VERDICTS)))
    bars = base.mark_rule().encode(y=y, x=alt.X("low:Q", scale=x, title="ours ÷ published effect (95 % interval)"),
                                   x2="high:Q", color=colour, tooltip=tooltip)
    dots = base.mark_point(filled=True, size=60).encode(y=y, x=alt.X("ratio:Q", scale=x), color=colour,
                                                        tooltip=tooltip)
    refs = alt.Chart(alt.Data(values=[{"at": 0.0}, {"at": 1.0}])).mark_rule(strokeDash=[4, 3], color="#777").encode(
        x=alt.X("at:Q", scale=x))
    return vega(alt.layer(refs, bars, dots).properties(width=420, height=alt.Step(22)))


# ---- pages ----------------------------------------------------------------------------------------------------

def seed_body(link: SeedLinks, rows: Sequence[Row], figures: Mapping[str, Sequence[Chart]],
              models: Sequence[ModelRow]) -> str:
    """A seed's page. `figures`: each notebook's charts by its study (notebook.figures); `models`: every held-out
    test (paper.heldout.rows), of which those of the studies serving the seed are shown."""
    s = link.seed
    mine = [r for r in rows if r.outcome.claim.seed == s.id]
    out = [f"<h1>{esc(seed_title(s))}</h1>", f'<p class="lead">What it measured: {esc(s.measured)}.</p>']
    if s.published:
        out.append(f"<p>Its headline ({esc(s.where)}): {esc(s.published)}.</p>")
    sections = [("claims", "its claims"), ("figures", "figures"), ("model", "model")]
    stand_ins = [x for x in standins.STAND_INS if x.seed == s.id]
    sections += [("stand-ins", "stand-ins")] if stand_ins else []
    out.append("<p>On this page: " + " · ".join(f'<a href="#{i}">{esc(t)}</a>' for i, t in sections) + ".</p>")
    out.append("<h2>The study notebooks that serve it</h2><ul>")
    out += [f'<li><a href="../{esc(page)}">{esc(study)}</a> (notebook {esc(page.rsplit("/", 1)[1])})</li>'
            for study, page in link.notebooks]
    out += [f"<li>{esc(study)} (planned: no notebook yet)</li>" for study in link.planned]
    out.append("</ul>")
    tally = claimsmod.tally_words(r.outcome for r in mine)
    out.append(f'<h2 id="claims">Its claims</h2><p>{len(mine)} rows testing '
               f"{len(claimsmod.seed_claims(r.outcome for r in mine))} of its claims"
               + (f": {esc(tally)}" if tally else "") + ". Verdicts are Holm-adjusted within the seed's family, as "
               "the paper prints them (the rule is on the <a href=\"../index.html#verdicts\">index page</a>).</p>")
    ratio = ratio_chart(mine)
    if ratio is not None:
        out.append(chart(ratio, "Ours ÷ the published effect, each row with its 95 % interval (dashed: 0, no "
                                "effect; 1, the published effect; intervals beyond the axis end at its edge). "
                                "Hover a row for its claim."))
    else:
        out.append("<p>No row of this seed has a published effect to divide by (its claims state directions).</p>")
    out.append(claims_table(mine) if mine else "<p>No claim of this seed is tested yet.</p>")
    out.append(legend(mine))
    out.append(figures_section(link, figures))
    out.append(models_section(link, models))
    if stand_ins:
        out.append('<h2 id="stand-ins">Stand-ins</h2><table><thead><tr><th>system</th><th>mechanism</th>'
                   "<th>our engine</th><th>setting</th><th>from</th></tr></thead><tbody>")
        out += [f"<tr><td>{esc(x.system)}</td><td>{esc(x.mechanism)}</td><td>{esc(x.engine)}</td>"
                f"<td>{esc(x.setting)}</td><td>{esc(x.source)}: {esc(x.basis)}</td></tr>" for x in stand_ins]
        out.append("</tbody></table>")
    return "\n".join(out)


def figures_section(link: SeedLinks, figures: Mapping[str, Sequence[Chart]]) -> str:
    """Every chart of each notebook serving the seed, grouped by notebook, each captioned with the notebook's section
    it sits in and a link to the notebook. All of them, not a pick: no study marks a chart as its key one (the paper
    chooses its figures in its TeX), and a notebook has a handful, so the page stays a reasonable size."""
    out = ['<h2 id="figures">Figures</h2>']
    shown = [(study, page, figures.get(study, ())) for study, page in link.notebooks]
    if not any(charts for _, _, charts in shown):
        out.append("<p>No notebook serving this seed has a chart yet.</p>")
        return "\n".join(out)
    out.append("<p>The charts of the notebooks that serve this seed, as committed (hover for values); each notebook "
               "has the text, tables and values around them.</p>")
    for study, page, charts in shown:
        name = page.rsplit("/", 1)[1].removesuffix(".html")
        link_html = f'<a href="../{esc(page)}">{esc(name)}</a>'
        out.append(f'<h3 class="notebook-figures">Notebook {link_html} (study {esc(study)})</h3>')
        if not charts:
            out.append("<p>This notebook has no chart.</p>")
        for i, c in enumerate(charts, 1):
            caption = f"{c.heading.rstrip('.:')}. " if c.heading else ""
            out.append(chart(c.spec, caption, c.options, f"Chart {i} of {len(charts)} of notebook {link_html}.",
                             name))
    return "\n".join(out)


MODEL_HEADER = ("model", "of", "predicts", "held-out points", "held-out error, worst point [95 % CI]", "bound",
                "verdict", "why")


def models_section(link: SeedLinks, models: Sequence[ModelRow]) -> str:
    """The held-out tests of the models of the studies serving the seed (the rows of the paper's table of models),
    and a line for each serving study that has none."""
    # the rule in words without its numbers: they are snaptax.models.heldout's, which the site, like the paper's
    # table, does not import (each row's bound and reason carry them)
    out = ['<h2 id="model">Model: held-out tests</h2>',
           "<p>Each model is fitted on some of its study's points and predicts the others (both sets fixed in the "
           "study's plan before the data are looked at). It <b>predicts</b> when the interval of its error at every "
           "held-out point lies within the bound; otherwise it is <b>descriptive only</b>, and the last column says "
           "why. The paper's table of models has the same rows.</p>"]
    present = link.seed.models_present()
    if present:
        out.append("<p>The models of snaptax that explain this seed: "
                   + "; ".join(f"<code>{esc(m.module)}</code>, {esc(m.explains)}" for m in present) + ".</p>")
    without = []
    for study in link.studies:
        tests = [r for r in models if r.study == study]
        if not tests:
            without.append(study)
            continue
        out.append(f'<h3>Study {esc(study)}</h3><table class="models"><thead><tr>'
                   + "".join(f"<th>{esc(h)}</th>" for h in MODEL_HEADER) + "</tr></thead><tbody>")
        out += [model_row(r) for r in tests]
        out.append("</tbody></table>")
    if without:
        out.append(f'<p class="no-model">No model with a held-out test in {"study" if len(without) == 1 else "studies"}'
                   f" {esc(', '.join(without))}.</p>")
    return "\n".join(out)


def model_row(r: ModelRow) -> str:
    n, bound, verdict = r.get("n"), r.get("bound"), r.text("verdict")
    cells = [f"<td>{esc(r.words)}</td>", f"<td>{esc(r.subset)}</td>", f"<td>{esc(r.text('predicts'))}</td>",
             f'<td class="num">{esc(format_number(n.value)) if n else "–"}</td>',
             f'<td class="num">{esc(heldout.error_text(r) or "none")}</td>',
             f'<td class="num">{"±" + esc(format_number(bound.value)) + " %" if bound else "–"}</td>',
             f'<td class="{verdict_class(verdict)}">{esc(verdict)}</td>', f"<td>{esc(r.text('reason'))}</td>"]
    return f'<tr data-model="{esc(f"{r.study}.{r.model}")}">' + "".join(cells) + "</tr>"


def index_body(rows: Sequence[Row], links: Sequence[SeedLinks], notebooks: Sequence[tuple[str, str, list[str]]],
               rig: str, profile: str, versions: Sequence[tuple[str, str]]) -> str:
    """The index: `notebooks` as (study, page, the seeds it serves)."""
    out = ["<h1>snaptax: the companion site</h1>",
           '<p class="lead">The performance tax of storage snapshots, measured: the paper\'s claims table and the '
           "study notebooks that measured it, to read in a browser without a network. Every page works opened "
           "from disk or from any local web server; every chart is interactive (hover for values; its menu saves "
           "it as SVG or PNG) and drawn by the Vega vendored with the site: nothing is fetched.</p>",
           f"<p>Built by snaptax {esc(__version__)} from the committed notebooks (as committed, not executed) and "
           f"{esc(profiles.runs_words(profile))} on rig {esc(rig)} under data/: the rows `make claims` prints.</p>",
           "<h2>The seeds</h2><p>Five documents whose measurements the paper reproduces; a page for each, with its "
           "claims rows, the figures of the notebooks that serve it and its models' held-out tests.</p>"
           "<table><thead><tr><th>seed</th><th>what it measured"
           "</th><th>notebooks</th></tr></thead><tbody>"]
    for link in links:
        nbs = ", ".join(f'<a href="{esc(page)}">{esc(study)}</a>' for study, page in link.notebooks)
        out.append(f'<tr><td><a href="{esc(link.page)}">{esc(seed_title(link.seed))}</a></td>'
                   f"<td>{esc(link.seed.measured)}</td><td>{nbs}</td></tr>")
    out.append("</tbody></table>")
    out.append("<h2>Verdicts per seed</h2>")
    out.append(chart(tally_chart(rows), "The claims rows of each seed by verdict (hover a bar for its count)."))
    out.append(tally_table(rows, links))
    out.append(f'<h2 id="verdicts">How a verdict is reached</h2><p>{esc(claimsmod.VERDICT_RULE)}</p>')
    out.append("<h2>The notebooks</h2><ul>")
    for study, page, served in notebooks:
        seeds_ = ", ".join(f'<a href="{esc(seed_page(s))}">seed {esc(s)}</a>' for s in served)
        out.append(f'<li><a href="{esc(page)}">{esc(page.rsplit("/", 1)[1].removesuffix(".html"))}</a>: study '
                   f"{esc(study)}" + (f", serving {seeds_}" if seeds_ else "") + "</li>")
    out.append("</ul>")
    vendored = ", ".join(f"{esc(n)} {esc(v)}" for n, v in versions)
    out.append(f"<h2>Made with</h2><p>nbconvert (the notebook pages), altair and vl-convert (the charts' specs), "
               f"and, vendored under <code>assets/</code> with their licences: {vendored}.</p>")
    return "\n".join(out)
