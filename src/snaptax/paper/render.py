"""Paper assets from data/ alone: each study's newest run of the profile is analysed (the run itself is never
written: its derived values are cached under build/, snaptax.derived); its values go to paper/generated/values.tex
and, as printed, to the committed paper/printed/<rig>-<profile>.tsv (snaptax.paper.printedvalues); its figures and
tables to paper/figures and paper/generated; the claims of all studies to one table. A value the paper asks for that
no run provides stops the build with one line naming it (before LaTeX runs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .. import (
    claims as claimsmod,
    derived,
    judged,
    operatingpoints,
    paths,
    profiles,
    provenance,
    registration,
    standins,
    studies,
)
from ..analysis import Analysis
from ..host import rig as rigmod
from ..record import LATENESS_LIMIT, Manifest, RunRef, load_run, readable_runs, short_run_id, write_atomic
from ..record.lateness import FLASH
from ..values import DerivedValues, Value
from . import (
    article,
    clauses,
    figures,
    heldout,
    heldoutfigure,
    macros,
    printedvalues,
    printsize,
    prose,
    repro,
    sources,
)


@dataclass(frozen=True)
class Rendered:
    study: str
    run: RunRef                  # a whole run's directory, or a complete set of part runs (record.parts)
    analysis: Analysis
    derived: DerivedValues       # analysis.derived_values(), made once


@dataclass(frozen=True)
class RenderedPaper:
    """What render made: each study's rendered run, the committed file of printed values with what changed in it
    (empty: the data print what the file says), and the paper's sentences its data no longer support (prose.Fact,
    each named on the first page; empty for a smoke build, which does not check them), and the one line saying how
    the installed measuring tools differ from those the runs recorded ('' when they do not)."""

    studies: list[Rendered]
    printed_file: Path
    printed_changes: list[str]
    outdated: list[str]
    tool_drift: str


def analyse_newest(rig: str, profile: str) -> list[Rendered]:
    """Analyse the newest published run of every registered study for the rig and profile, or the run a selection
    (profiles.SELECTIONS) picks for it (its derived values cached, snaptax.derived). Raises (one line) for an
    unknown profile or rig, or a study without a run."""
    profiles.run_profiles(profile)
    rigmod.load(rig)
    out = []
    for study in studies.REGISTRY:
        run = study.newest_run(rig, profile)
        analysis = derived.analyse(run)
        out.append(Rendered(study.id, run, analysis, analysis.derived_values()))
    return out


def paper_outcomes(rendered: list[Rendered]) -> list[claimsmod.Outcome]:
    """Every rendered study's claim rows with the verdicts the paper prints: each run's claims judged by the
    registration in force when it was measured and the operating points it measured at (snaptax.judged), then
    adjusted within each seed's family (claims.adjusted, Holm)."""
    return claimsmod.adjusted([o for r in rendered for o in judged.for_run(
        r.analysis.outcomes, r.analysis.record.manifest.registration, judged.inferred_in(r.derived))])


def run_value(r: Rendered, name: str) -> float:
    """A rendered study's run value <study>.run.<name> (analysis.run_values)."""
    return r.derived.values[f"{r.study}.run.{name}"].value


def run_column(rendered: list[Rendered], name: str) -> list[float]:
    """Each rendered study's run value <study>.run.<name>, in study order."""
    return [run_value(r, name) for r in rendered]


def claims_count_values(outcomes: list[claimsmod.Outcome]) -> list[Value]:
    """paper.claims.*: the claims table's rows and the distinct seed claims they test (several rows may test one),
    the verdicts of all rows (paper.claims.<verdict>, of paper.claims.total), of the rows whose value we measured
    (paper.claims.measured.*) and of those whose value is a model's prediction (paper.claims.model.*, with a clause
    for the abstract), and the provisional rows."""
    measured = [o for o in outcomes if not o.claim.is_model]
    model = [o for o in outcomes if o.claim.is_model]
    provisional = [o for o in outcomes if o.claim.provisional]
    measured_provisional = [o for o in measured if o.claim.provisional]
    vals = [Value("paper.claims.total", float(len(outcomes)), "rows"),
            Value("paper.claims.rows", float(len(outcomes)), "rows"),
            Value("paper.claims.seed_claims", float(len(claimsmod.seed_claims(outcomes))), "seed claims")]
    for prefix, outs in (("paper.claims", outcomes), ("paper.claims.measured", measured),
                         ("paper.claims.model", model)):
        for verdict, n in claimsmod.tally(outs).items():
            vals.append(Value(f"{prefix}.{verdict.replace(' ', '_')}", float(n), "rows"))
    vals += [Value("paper.claims.measured.rows", float(len(measured)), "rows"),
             Value("paper.claims.measured.seed_claims", float(len(claimsmod.seed_claims(measured))), "seed claims"),
             Value("paper.claims.model.rows", float(len(model)), "rows"),
             Value("paper.claims.model.list", text=article.join_words(claimsmod.seed_claims(model)) or "none"),
             Value("paper.claims.model.clause", text=model_clause(model)),
             Value("paper.claims.provisional.rows", float(len(provisional)), "rows"),
             Value("paper.claims.provisional.list",
                   text=article.join_words(claimsmod.seed_claims(provisional)) or "none"),
             Value("paper.claims.provisional.clause", text=provisional_clause(measured_provisional)),
             Value("paper.claims.measured.clause", text=verdicts_clause(measured))]
    return vals


def verdicts_clause(outcomes: list[claimsmod.Outcome]) -> str:
    """The abstract's and the introduction's count of verdicts, worded for the counts at hand: those judged (agree,
    differ, inconclusive), those not judged and why, and the statements that calibrate a stand-in."""
    t = claimsmod.tally(outcomes)
    n_judged = t["agrees"] + t["differs"] + t["inconclusive"]
    parts = []
    if n_judged:
        parts.append(f"{t['agrees']} agree, {t['differs']} differ and {t['inconclusive']} are inconclusive "
                     "(Holm-adjusted within each seed)")
    not_judged = [o for o in outcomes if o.verdict == "not judged"]
    if not_judged:
        by_registration = sum(bool(o.claim.unjudged) for o in not_judged)
        few = sum(not o.claim.unjudged and o.judgeable.startswith("n <") for o in not_judged)
        within = len(not_judged) - few - by_registration
        why = [w for w in (f"{few} rest on fewer than three independent runs" if few else "",
                           f"{within} on samples within one run" if within else "",
                           f"{by_registration} by the pre-registration (not registered, registered as not judged, "
                           "or registered as another quantity)" if by_registration else "") if w]
        parts.append(f"{len(not_judged)} {'is' if len(not_judged) == 1 else 'are'} not judged "
                     f"({article.join_words(why)})")
    if t["calibration"]:
        parts.append(f"{t['calibration']} calibrate a stand-in and are not judged")
    return article.join_words(parts) if parts else "none is judged"


def provisional_clause(provisional: list[claimsmod.Outcome]) -> str:
    """The abstract's and the introduction's clause on the measured rows that are provisional (a known bias of their
    run: Claim.provisional), with the seed claims they test."""
    if not provisional:
        return "none of them is provisional"
    labels = article.join_words(claimsmod.seed_claims(provisional))
    return (f"{len(provisional)} of them ({labels}) are provisional" if len(provisional) > 1
            else f"1 of them ({labels}) is provisional")


def model_clause(model: list[claimsmod.Outcome]) -> str:
    """The abstract's and the introduction's clause on the rows whose value is a model's prediction: their count and
    verdicts, said to check a model rather than to reproduce a measurement."""
    if not model:
        return "no row checks a model's prediction in place of a measurement"
    rows, verb = (f"{len(model)} rows", "check") if len(model) > 1 else ("1 row", "checks")
    labels = article.join_words(claimsmod.seed_claims(model))
    return (f"{rows} ({labels}) {verb} a model's prediction, not a measurement, against the published value "
            f"({claimsmod.tally_words(model)})")


def paper_values(rig: str, profile: str, rendered: list[Rendered]) -> list[Value]:
    outcomes = paper_outcomes(rendered)
    lateness = [v for v in run_column(rendered, "worst_lateness_pct") if math.isfinite(v)]
    vals = [Value("paper.rig", text=rig), Value("paper.profile", text=profile),
            Value("paper.profile.clause", text=repro.selection_clause(rendered)),
            Value("paper.verdict_rule", text=claimsmod.VERDICT_RULE),
            Value("paper.registration.rule", text=registration.TOLERANCE_RULE)]
    vals += claims_count_values(outcomes)
    for o in outcomes:
        c = o.claim
        vals.append(Value(f"claim.{c.id}.published", c.published, c.unit, digits=claimsmod.published_decimals(c),
                          text=c.published_text or None))
        vals.append(Value(f"claim.{c.id}.where", text=c.where))
        vals.append(Value(f"claim.{c.id}.tolerance", c.tolerance, claimsmod.tolerance_unit(c),
                          digits=0 if float(c.tolerance).is_integer() else 2))
        vals.append(Value(f"claim.{c.id}.verdict", text=o.verdict))
        vals.append(Value(f"claim.{c.id}.basis", text=c.basis))
        ratio = o.effect_ratio
        if ratio is not None:
            vals.append(ratio)
    vals.append(Value("paper.worst_lateness_pct", max(lateness) if lateness else math.nan, "%", digits=2))
    vals.append(Value("paper.flagged", sum(run_column(rendered, "flagged")), "measurements"))
    vals.append(Value("paper.emulated_measurements", sum(run_column(rendered, "emulated_measurements")),
                      "measurements"))
    vals.append(Value("paper.lateness_limit_pct", LATENESS_LIMIT * 100, "%", digits=0))
    vals.append(Value("paper.lateness_limit.flash_pct", FLASH.fraction * 100, "%", digits=0))
    flagged = [r for r in rendered if run_value(r, "flagged") > 0 and r.analysis.outcomes]
    vals.append(Value("paper.flagged.claim_rows", float(sum(len(r.analysis.outcomes) for r in flagged)), "rows"))
    vals.append(Value("paper.flagged.clause", text=flagged_clause(
        [(r.study, len(r.analysis.outcomes), run_value(r, "flagged"), run_value(r, "emulated_measurements"))
         for r in flagged], len(outcomes))))
    return vals


# the studies as the paper's prose names them (a reader sees words, not identifiers)
STUDY_WORDS = {"calibration": "the calibration", "memory_dump": "the memory-dump study",
               "lifecycle": "the lifecycle study", "tiering": "the tiering study",
               "db_snapshots": "the database-snapshot study", "engines": "the engine study",
               "chain_length": "the chain study", "metadata_cache": "the metadata-cache study",
               "chain_bulk": "the large-I/O chain study"}


def flagged_clause(studies: list[tuple[str, int, float, float]], rows: int) -> str:
    """Which studies' claim rows come from a run with flagged measurements, in words: per study (id, its claim rows,
    flagged, emulated measurements) its flagged share of the run's emulated measurements; then how many of all the
    claim rows that is. Plain text (the paper's threats section)."""
    if not studies:
        return "no claim row comes from a run with a flagged measurement"
    parts = [f"{STUDY_WORDS.get(s, s.replace('_', ' '))} ({flagged:.0f} of {emulated:.0f})"
             for s, _, flagged, emulated in studies]
    parts[0] = parts[0].removesuffix(")") + " emulated measurements flagged)"
    n = sum(k for _, k, _, _ in studies)
    return (f"the claim rows of {article.join_words(parts)} come from runs with flagged measurements: {n} of the "
            f"{rows} rows of the claims table")


PROVISIONAL_MARK = "$^\\dagger$"     # after the verdict of a provisional row; claims_notes_tex says why


def ours_cell(o: claimsmod.Outcome) -> str:
    """Our value with its interval below it, marked (model) when it is a model's prediction."""
    cell = macros.tex_escape(claimsmod.ours_str(o)).replace(" [", "\\newline[")    # interval below
    return f"{cell} \\emph{{{claimsmod.MODEL_MARK}}}" if o.claim.is_model else cell


def effect_ratio_cell(o: claimsmod.Outcome) -> str:
    """Ours ÷ the published effect (claims.effect_ratio) with its interval below it; blank without a published
    effect."""
    ratio = o.effect_ratio
    return "" if ratio is None else macros.tex_escape(ratio.formatted_ci()).replace(" [", "\\newline[")


def verdict_cell(o: claimsmod.Outcome) -> str:
    """The verdict, why a row is not judged, whether ours has the published effect's sign (the secondary column,
    never counted), and the provisional mark."""
    v = o.verdict + (f" ({o.judgeable})" if o.verdict == "not judged" and o.judgeable else "")
    sign = {True: "; same sign", False: "; other sign", None: ""}[o.same_direction]
    return macros.tex_escape(v + sign) + (PROVISIONAL_MARK if o.claim.provisional else "")


def claims_tex(outcomes: list[claimsmod.Outcome]) -> str:
    rows = []
    for o in outcomes:
        c = o.claim
        rows.append([c.seed_label, f"{macros.wrappable(c.statement)} \\cite{{{c.cite}}}, {macros.tex_escape(c.where)}",
                     macros.tex_escape(claimsmod.published_str(c)), ours_cell(o), effect_ratio_cell(o),
                     macros.tex_escape(claimsmod.tolerance_str(c)).replace("±", "$\\pm$"),
                     macros.tex_escape(c.stand_in), verdict_cell(o)])
    # a longtable: the table runs over pages as studies add claims (a float cannot, and overflowed the page)
    return macros.render_long_table("claims", ["Seed claim", "Claim (source)", "Published", "Ours [95\\,\\% CI]",
                                               "Ours ÷ published effect", "Tolerance", "Our stand-in", "Verdict"],
                                    rows)


def claims_notes_tex(outcomes: list[claimsmod.Outcome]) -> str:
    """The claims table's notes that depend on the rows: which rows are model checks, and which are provisional
    and why (each reason once, with the seed claims it concerns)."""
    model = claimsmod.seed_claims(o for o in outcomes if o.claim.is_model)
    items = []
    if model:
        items.append(f"\\emph{{{claimsmod.MODEL_MARK}}} after our value ({article.join_words(model)}): it is a "
                     "model's prediction from what was measured, not a measurement; the verdict checks the model "
                     "against the published value.")
    reasons: dict[str, list[str]] = {}
    for o in outcomes:
        if o.claim.provisional:
            reasons.setdefault(o.claim.provisional, []).append(o.claim.seed_label)
    for reason, labels in reasons.items():
        items.append(f"{PROVISIONAL_MARK} provisional ({article.join_words(list(dict.fromkeys(labels)))}): "
                     f"{macros.tex_escape(reason)} (Section~\\ref{{sec:repro}}).")
    if not items:
        return "% generated by snaptax from data/; do not edit\n"
    return ("% generated by snaptax from data/; do not edit\n\\noindent Notes on Table~\\ref{tab:claims}:\n"
            "\\begin{itemize}\n"
            + "\n".join(f"\\item {i}" for i in items) + "\n\\end{itemize}\n")


def tolerance_bases_tex(outcomes: list[claimsmod.Outcome]) -> str:
    seen: dict[str, list[str]] = {}
    for o in outcomes:
        c = o.claim
        text = (f"$\\pm${c.tolerance:g}\\,{macros.tex_escape(claimsmod.tolerance_unit(c))}: "
                f"{macros.tex_escape(c.tolerance_basis)}")
        seen.setdefault(text, []).append(o.claim.id)
    items = [f"\\item {text} ({len(ids)} row{'s' if len(ids) > 1 else ''})" for text, ids in seen.items()]
    return "% generated by snaptax from data/; do not edit\n\\begin{itemize}\n" + "\n".join(items) + \
        "\n\\end{itemize}\n"


def runs_tex(rendered: list[Rendered]) -> str:
    rows = []
    for r in rendered:
        m = r.analysis.record.manifest
        run = {name: run_value(r, name) for name in ("worst_lateness_pct", "flagged", "emulated_measurements")}
        worst = (f"{run['worst_lateness_pct']:.2f}\\,\\% ({run['flagged']:.0f} of {run['emulated_measurements']:.0f})"
                 if run["emulated_measurements"] else "--")
        rows.append([macros.tex_escape(r.study), f"\\texttt{{{macros.tex_escape(short_run_id(m.run_id))}}}",
                     macros.tex_escape(m.code_label), macros.tex_escape(m.host_label), str(m.measurements), worst,
                     "emulated" if m.emulated else "real"])
    return macros.render_table(["study", "run", "commit", "host", "fio runs", "worst lateness (flagged)", "devices"],
                               rows, align="llrlrrl")


def dirty_runs_tex(manifests: list[Manifest]) -> str:
    """The paper's first-page note on the code that measured: every run it uses (each study's cited run and the
    run it is compared with) whose measuring code had uncommitted changes, by study, run and commit ('+': the
    changes, kept as a diff beside the run's manifest), or that all were measured from committed code."""
    dirty = sorted({(m.study, short_run_id(m.run_id), m.code_label) for m in manifests if m.code_label.endswith("+")})
    used = len({m.run_id for m in manifests})
    head = "% generated by snaptax from data/; do not edit\n"
    if not dirty:
        every = "the one run this paper uses was" if used == 1 else f"all {used} runs this paper uses were"
        return head + rf"\noindent\emph{{Provenance: {every} measured from committed code.}}\par\medskip" + "\n"
    runs = "; ".join(rf"{macros.tex_escape(study)} \texttt{{{macros.tex_escape(run)}}} "
                     rf"(\texttt{{{macros.tex_escape(code)}}})" for study, run, code in dirty)
    return head + (r"\noindent\fbox{\parbox{\dimexpr\linewidth-2\fboxsep-2\fboxrule}{\small\emph{Provenance:} "
                   rf"{len(dirty)} of the {used} runs this paper uses were measured from code with uncommitted "
                   r"changes (commit+; the changes are kept as a diff beside each run's manifest): "
                   rf"{runs}.}}}}\par\medskip" + "\n")


def stand_ins_tex(values: dict[str, Value], reg: registration.Registration | None,
                  points: dict[str, operatingpoints.OperatingPoint] | None = None) -> str:
    """The stand-in record (snaptax.standins) as the paper's method prints it: per seed system the mechanism, the
    setting that carries it, where its value comes from, and for an inferred one the calibrating seed statement
    (marked) and the operating point in use: the rig's (points: rigs/operating-points, with the run it was inferred
    from), else the value the newest run of the sweep gives, with its interval where a run gives it."""
    esc = macros.tex_escape
    rows = []
    for s in standins.STAND_INS:
        if s.source == "inferred":
            label = reg.claims[s.calibrating].label if reg and s.calibrating in reg.claims else s.calibrating
            v, p = values.get(s.value_key), (points or {}).get(s.id)
            got = (f"{p.value:.3f} [{p.low:.3f}, {p.high:.3f}] from run {short_run_id(p.run)}" if p is not None else
                   v.formatted_ci() if v is not None else "not yet inferred")
            source = f"inferred from {label} (calibrating: not judged): {s.basis}; value {got}"
        else:
            source = f"{s.source}: {s.basis}"
        if s.bound:
            source += f"; bound: {s.bound}"
        rows.append([s.seed, esc(s.system), esc(s.mechanism), esc(f"{s.engine}; {s.setting}"), esc(source)])
    col = ">{\\raggedright\\arraybackslash}p"
    return macros.render_table(["Seed", "System", "Mechanism (the seed's)", "Our engine and setting",
                                "Where the setting comes from"], rows,
                               align=f"l{col}{{0.15\\linewidth}}{col}{{0.2\\linewidth}}{col}{{0.2\\linewidth}}"
                                     f"{col}{{0.3\\linewidth}}")


def unjudged_tex(reg: registration.Registration | None) -> str:
    """The seed statements registered as not judged, each with why (the registration's reasons)."""
    esc = macros.tex_escape
    items = [f"\\item {c.label} ({esc(c.statement)} \\cite{{{c.cite}}}, {esc(c.where)}): {esc(c.reason)}"
             for c in (reg.claims.values() if reg else ()) if c.role == "unjudged"]
    if not items:
        return "% generated by snaptax from paper/preregistration/; do not edit\n"
    return ("% generated by snaptax from paper/preregistration/; do not edit\n\\begin{itemize}\n"
            + "\n".join(items) + "\n\\end{itemize}\n")


def untested_tex(reg: registration.Registration | None, outcomes: list[claimsmod.Outcome]) -> str:
    """The seed statements the registration judges (or calibrates with) that no row of this build's claims table
    tests: each named, so that a registered statement never drops out of the paper unseen."""
    esc = macros.tex_escape
    tested = {o.claim.id for o in outcomes}
    items = [f"\\item {c.label} ({esc(c.statement)} \\cite{{{c.cite}}}, {esc(c.where)}): registered as {c.role}; "
             "no study of this build tests it"
             for c in (reg.claims.values() if reg else ()) if c.role != "unjudged" and c.id not in tested]
    head = "% generated by snaptax from paper/preregistration/ and the claims table; do not edit\n"
    if not items:
        return head + "None.\n"
    return head + "\\begin{itemize}\n" + "\n".join(items) + "\n\\end{itemize}\n"


def study_times(rig: str) -> list[article.StudyTimes]:
    """For the artifact table: every registered study's newest published runs at each measured profile and what
    its plan predicts at each profile (nothing measured)."""
    out = []
    for study in studies.REGISTRY:
        runs = {p: tuple(load_run(r).manifest for r in readable_runs(rig, study.id, p)[-article.RUNS_SHOWN:])
                for p in article.MEASURED_PROFILES}
        planned = {p: study.planned_seconds(profiles.get(p), rig)
                   for p in (*article.MEASURED_PROFILES, article.EXTRAPOLATED)}
        out.append(article.StudyTimes(study.id, study.notebook, runs, planned, study.no_planned_time()))
    return out


def render_all(rig: str = "local", profile: str = profiles.DEFAULT, paper_dir: Path | None = None) -> RenderedPaper:
    paper_dir = paper_dir or paths.PAPER_DIR
    figure_dir, generated_dir = paths.figures_dir(paper_dir), paths.generated_dir(paper_dir)
    rendered = analyse_newest(rig, profile)
    # smoke's numbers mean nothing: the prose is checked on the paper's own runs; a sentence they no longer support
    # is named on the first page and to the caller, and the paper is still built
    outdated = [] if profile == "smoke" else prose.broken(prose.FACTS, prose.fact_values(r.derived for r in rendered))
    values: list[Value] = []
    made: dict[str, sources.Source] = {}
    # each chart drawn for the width the documents print it at: its smallest text prints at 7 pt or more
    printed_widths = printsize.figure_widths(paper_dir)
    for r in rendered:
        study = studies.get(r.study)
        with sources.tracing(study.module("present"), f"notebooks/{study.notebook}") as traced, \
                figures.printed_at(printed_widths):
            study.module("present").write(r.analysis, figure_dir, generated_dir)
        made.update(traced)
        values += list(r.derived.values.values())
    values += paper_values(rig, profile, rendered)
    comparisons, compared = repro.rerun_comparisons(rig, rendered)
    values += repro.repro_values(comparisons, compared)
    across, across_runs = repro.profile_comparisons(rig, rendered)
    values += repro.profile_values(across)
    outcomes = paper_outcomes(rendered)
    glance = article.glance_rows(outcomes, [r.study for r in rendered])
    manifests = {r.study: r.analysis.record.manifest for r in rendered}
    values += article.glance_values(glance)
    values += article.environment_values(manifests)
    times = study_times(rig)
    values += article.time_values(times)
    values += article.bench_values(paths.BENCH_LATEST)
    values += heldout.heldout_values({v.key: v for v in values})
    values += clauses.clause_values({v.key: v for v in values})
    frame = heldoutfigure.points_frame(heldoutfigure.heldouts_of({r.study: r.analysis for r in rendered}))
    with figures.printed_at(printed_widths):
        figures.save(heldoutfigure.chart(frame), heldoutfigure.FIGURE, figure_dir)
    made[heldoutfigure.FIGURE] = sources.Source(heldoutfigure.FIGURE, "snaptax.paper.heldoutfigure.chart")
    for stem, fn in (("claims", claims_tex), ("runs", runs_tex), ("reruns", repro.repro_tex),
                     ("profiles", repro.profile_tex), ("glance", article.glance_tex),
                     ("artifact", article.artifact_tex), ("stand-ins", stand_ins_tex),
                     ("heldout", heldout.heldout_tex)):
        made[stem] = sources.Source(stem, f"{fn.__module__}.{fn.__name__}")
    tex_files = sorted(paper_dir.glob("*.tex")) + sorted((paper_dir / "sections").glob("*.tex"))
    macros.check_available(macros.keys_used(tex_files), (v.key for v in values))
    sources.check_sources(tex_files, made)
    macros.write_table("glance", article.glance_tex(glance), generated_dir)
    newest_registration = registration.newest()
    macros.write_table("stand-ins", stand_ins_tex({v.key: v for v in values}, newest_registration,
                                                  operatingpoints.read(rig)), generated_dir)
    write_atomic(generated_dir / "unjudged.tex", unjudged_tex(newest_registration))
    write_atomic(generated_dir / "untested.tex", untested_tex(newest_registration, outcomes))
    macros.write_table("artifact", article.artifact_tex(times), generated_dir)
    write_atomic(generated_dir / "sources.tex", sources.sources_tex(made.values()))
    macros.write_table("claims", claims_tex(outcomes), generated_dir)
    write_atomic(generated_dir / "claims-notes.tex", claims_notes_tex(outcomes))
    write_atomic(generated_dir / "claims-tolerances.tex", tolerance_bases_tex(outcomes))
    macros.write_table("runs", runs_tex(rendered), generated_dir)
    macros.write_table("reruns", repro.repro_tex(comparisons, compared), generated_dir)
    macros.write_table("profiles", repro.profile_tex(across, across_runs), generated_dir)
    macros.write_table("heldout", heldout.heldout_tex({v.key: v for v in values}), generated_dir)
    used = [r.analysis.record.manifest for r in rendered] + list(compared.values()) + list(across_runs.values())
    write_atomic(generated_dir / "frontnote.tex", dirty_runs_tex(used) + prose.outdated_tex(outdated))
    by_key = {v.key: v for v in values}
    advice = [m for m in prose.ADVICE_MODELS if prose.advice_holds(by_key, m)]
    write_atomic(generated_dir / "values.tex", macros.render_tex(values, advice))
    printed_file = printedvalues.path_for(paper_dir, rig, profile)
    drift = provenance.tool_drift([m.provenance.get("tools", {}) for m in used], provenance.tool_versions())
    return RenderedPaper(rendered, printed_file, printedvalues.update(printed_file, values), outdated, drift)
