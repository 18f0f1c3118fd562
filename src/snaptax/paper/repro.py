"""The paper's reproducibility comparisons, from data/ alone: each study's paper run against the run of the same
profile before it (a rerun), and a paper-grade (full) run against the newest quick run of its study (the everyday
rerun against the paper-grade one: does `make paper` find what the paper prints?). Both use snaptax.compare."""
from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from .. import compare, derived, profiles
from ..analysis import Analysis
from ..record import Manifest, RunRef, load_run, readable_runs, short_run_id
from ..values import DerivedValues, Value
from . import article, macros


class Rendered(Protocol):
    """A study's run as render analysed it (render.Rendered; a protocol, so that render may import this module)."""

    @property
    def study(self) -> str: ...

    @property
    def run(self) -> RunRef: ...

    @property
    def analysis(self) -> Analysis: ...

    @property
    def derived(self) -> DerivedValues: ...

PAPER_GRADE, EVERYDAY = profiles.SELECTIONS["paper"]    # the paper's first choice, and what make paper measures
Comparisons = tuple[list[compare.RunComparison], dict[str, Manifest]]


def run_profile(r: Rendered) -> str:
    """The profile a rendered study's run was measured at (a run selection mixes them)."""
    return r.analysis.record.manifest.profile.name


def rerun_comparisons(rig: str, rendered: Sequence[Rendered]) -> Comparisons:
    """Each study's newest run against the newest run of the same profile before it at the same inferred operating
    points (a rerun on the same rig: a run at other settings measured another stand-in), and the manifest of each
    compared run (run id -> Manifest: the code and host it measured with), from the records loaded for it."""
    out, manifests = [], {}
    for r in rendered:
        runs = readable_runs(rig, r.study, run_profile(r))
        if len(runs) < 2 or runs[-1] != r.run:
            continue
        points = compare.operating_points_of(r.derived)
        earlier = next(((run, d) for run in reversed(runs[:-1])      # analysed newest first, only as far as needed
                        if compare.operating_points_of(d := derived.values_of(run)) == points), None)
        if earlier is not None:
            run, values = earlier
            previous = load_run(run)
            out.append(compare.compare_derived(values, r.derived, (previous.manifest.registration,
                                                                   r.analysis.record.manifest.registration)))
            for m in (previous.manifest, r.analysis.record.manifest):
                manifests[m.run_id] = m
    return out, manifests


def same_host(comparison: compare.RunComparison, manifests: dict[str, Manifest]) -> bool:
    """Both runs of a comparison measured on the same host model (Manifest.host_label; an unrecorded host is
    never the same)."""
    hosts = {manifests[r].host_label if r in manifests else "?" for r in (comparison.run_a, comparison.run_b)}
    return len(hosts) == 1 and "?" not in hosts


def started(m: Manifest) -> datetime | None:
    """When a run started measuring (UTC), None when its manifest's time is unreadable."""
    try:
        return datetime.fromisoformat(m.started_utc.replace("Z", "+00:00"))
    except ValueError:
        return None


def days_clause(comparisons: list[compare.RunComparison], manifests: dict[str, Manifest]) -> str:
    """The pairs whose two runs started on different UTC dates (issue 49: a study measured again on another day),
    in words: each with both dates, the hours between the two starts, and whether both hosts had one processor
    model; 'none' when every pair was measured on one day."""
    parts = []
    for c in comparisons:
        ma, mb = manifests.get(c.run_a), manifests.get(c.run_b)
        if ma is None or mb is None or (ta := started(ma)) is None or (tb := started(mb)) is None \
                or ta.date() == tb.date():
            continue
        hours = abs((tb - ta).total_seconds()) / 3600
        host = (f"both on one processor model, {ma.host_label}" if same_host(c, manifests)
                else f"on two processor models, {ma.host_label} and {mb.host_label}")
        parts.append(f"{c.study} on {ta.date().isoformat()} and {tb.date().isoformat()} ({hours:.0f} h between "
                     f"their starts; {host})")
    return "; ".join(parts) or "none"


def repro_values(comparisons: list[compare.RunComparison], manifests: dict[str, Manifest]) -> list[Value]:
    same = sum(c.verdicts_reproduced for c in comparisons)
    total = sum(len(c.verdicts) for c in comparisons)
    decisive_same = sum(c.decisive_reproduced for c in comparisons)
    decisive = sum(len(c.decisive) for c in comparisons)
    largest = [c.largest for c in comparisons if c.largest is not None]
    worst = max(largest, key=lambda v: v.distance) if largest else None
    inconsistent = sum(len(c.inconsistent) for c in comparisons)
    comparable = sum(sum(v.comparable for v in c.values) for c in comparisons)
    on_one_host = sum(same_host(c, manifests) for c in comparisons)
    if on_one_host == len(comparisons) == 1:
        hosts = "the one pair ran both its runs on one host model"
    elif on_one_host == len(comparisons):
        hosts = f"all {on_one_host} pairs ran both their runs on one host model"
    else:
        hosts = (f"{on_one_host} of the {len(comparisons)} pairs ran both runs on one host model; the others "
                 "straddle a move between the two 2-core hosts this paper was built on")
    return [Value("paper.repro.studies", float(len(comparisons)), "studies"),
            Value("paper.repro.same_host", float(on_one_host), "studies"),
            Value("paper.repro.hosts", text=hosts),
            Value("paper.repro.days", text=days_clause(comparisons, manifests)),
            Value("paper.repro.verdicts_same", float(same), "rows"),
            Value("paper.repro.verdicts_total", float(total), "rows"),
            Value("paper.repro.decisive_same", float(decisive_same), "rows"),
            Value("paper.repro.decisive_total", float(decisive), "rows"),
            Value("paper.repro.inconclusive_both", float(total - decisive), "rows"),
            Value("paper.repro.values_inconsistent", float(inconsistent), "values"),
            Value("paper.repro.values_compared", float(comparable), "values"),
            Value("paper.repro.largest_distance", worst.distance if worst else math.nan, "intervals", digits=1),
            Value("paper.repro.largest_key", text=worst.key if worst else "none")]


def repro_tex(comparisons: list[compare.RunComparison], manifests: dict[str, Manifest] | None = None,
              empty: str = "No study has a rerun of this profile yet.",
              runs: tuple[str, str] = ("run", "rerun")) -> str:
    """The reruns table: per study its two runs, each with the code (Manifest.code_label) and host
    (Manifest.host_label) it measured with, the verdicts that reproduced and the values that were inconsistent."""
    manifests = manifests or {}

    def run_cell(run_id: str) -> str:
        m = manifests.get(run_id)
        label = f"{m.code_label}; {m.host_label}" if m else "?"
        return f"\\texttt{{{macros.tex_escape(short_run_id(run_id))}}} ({macros.tex_escape(label)})"

    rows = []
    for c in comparisons:
        big = c.largest
        rows.append([macros.tex_escape(c.study), run_cell(c.run_a), run_cell(c.run_b),
                     f"{c.verdicts_reproduced} of {len(c.verdicts)}",
                     f"{len(c.inconsistent)} of {sum(v.comparable for v in c.values)}",
                     f"{big.distance:.1f} ({macros.breakable(big.key)})" if big else "--"])
    if not rows:
        return "% generated by snaptax from data/; do not edit\n\\emph{" + empty + "}\n"
    return macros.render_table(["study", f"{runs[0]} (commit; host)", f"{runs[1]} (commit; host)", "same verdicts",
                                "values inconsistent", "largest difference (intervals)"], rows,
                               # printed on a landscape page (the supplement): the largest difference a fifth
                               # of its line, about what a third of a portrait line was, and each run's cell
                               # wrapped after its id (a set's id and its commit and host on one line made the
                               # table wider than the page, scaled below 7 pt: snaptax.paper.printsize)
                               align="lp{0.22\\linewidth}p{0.22\\linewidth}rrp{0.2\\linewidth}")




def profile_comparisons(rig: str, rendered: Sequence[Rendered]) -> Comparisons:
    """Each study whose paper run is paper-grade against the newest quick run of the study (the run `make paper`
    would rebuild from), whatever operating points each measured at (the comparison is between what the two
    profiles conclude, not a rerun), and the manifest of each compared run."""
    out, manifests = [], {}
    for r in rendered:
        if run_profile(r) != PAPER_GRADE or not (quick := readable_runs(rig, r.study, EVERYDAY)):
            continue
        everyday = load_run(quick[-1])
        out.append(compare.compare_derived(derived.values_of(quick[-1]), r.derived,
                                           (everyday.manifest.registration, r.analysis.record.manifest.registration)))
        for m in (everyday.manifest, r.analysis.record.manifest):
            manifests[m.run_id] = m
    return out, manifests


OPPOSITE = frozenset({"agrees", "differs"})


def profile_values(comparisons: list[compare.RunComparison]) -> list[Value]:
    """paper.profiles.*: how many studies have both a quick and a paper-grade run, their claims' verdicts that are
    the same at both, those that are opposite (agrees at one, differs at the other: the paper explains each), and
    every changed verdict in words ('none' when none changed)."""
    changed = [(c.study, v) for c in comparisons for v in c.verdicts if not v.same]
    opposite = [(s, v) for s, v in changed if {v.a, v.b} == OPPOSITE]
    words = "; ".join(f"{v.claim} {v.a} at quick, {v.b} paper-grade" for _, v in changed)
    return [Value("paper.profiles.studies", float(len(comparisons)), "studies"),
            Value("paper.profiles.list", text=", ".join(c.study for c in comparisons) or "none"),
            Value("paper.profiles.verdicts_same", float(sum(c.verdicts_reproduced for c in comparisons)), "rows"),
            Value("paper.profiles.verdicts_total", float(sum(len(c.verdicts) for c in comparisons)), "rows"),
            Value("paper.profiles.opposite", float(len(opposite)), "rows"),
            Value("paper.profiles.changed", text=words or "none"),
            Value("paper.profiles.values_inconsistent", float(sum(len(c.inconsistent) for c in comparisons)),
                  "values"),
            Value("paper.profiles.values_compared",
                  float(sum(sum(v.comparable for v in c.values) for c in comparisons)), "values")]


def profile_tex(comparisons: list[compare.RunComparison], manifests: dict[str, Manifest]) -> str:
    """The quick-against-paper-grade table, laid out as the reruns table."""
    return repro_tex(comparisons, manifests, empty="No study has a paper-grade run yet.",
                     runs=("quick run", "paper-grade run"))


def selection_clause(rendered: Sequence[Rendered]) -> str:
    """Which profile each study's run in this build comes from, in words for the first page (after the name of the
    profile or selection)."""
    by_profile: dict[str, list[str]] = {}
    for r in rendered:
        by_profile.setdefault(run_profile(r), []).append(r.study)
    if len(by_profile) == 1:
        (only,) = by_profile
        return f"every study's newest {only} run"
    parts = [f"{p} for {article.join_words(by_profile[p])}" for p in sorted(by_profile, key=_profile_rank)]
    return f"each study's newest paper-grade run where it has one, else its quick run ({'; '.join(parts)})"


def _profile_rank(profile: str) -> int:
    return {PAPER_GRADE: 0, EVERYDAY: 1}.get(profile, 2)
