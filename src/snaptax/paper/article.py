"""Paper-level content generated from data/, beyond each study's own values: the results-at-a-glance table (one row
per seed document, from `seeds`, the claims' outcomes and the models that exist: a headline claim and the tally of
all the seed's claim rows by verdict, model checks counted apart), the environment of the runs the
paper was built from and each study's time at each profile (artifact appendix: measured from the published runs'
manifests; the full profile's extrapolated from its plan's prediction and the quick runs' measured/planned ratio),
and the measurement path's ceiling from the committed `make bench` figures (bench/latest.json).

Everything here is a pure function of its inputs; `render` calls it and writes the results.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import claims as claimsmod, seeds as seedsmod
from ..claims import Outcome
from ..record import Manifest
from ..values import Value
from . import macros

NOT_MEASURED = "not yet measured"
NOT_TESTED = "not yet tested"


# ------------------------------------------------------------------ results at a glance

@dataclass(frozen=True)
class GlanceRow:
    seed: seedsmod.Seed
    outcomes: tuple[Outcome, ...]     # every claim row of this build that cites the seed
    headline: Outcome | None          # the row's headline claim, if a run tests one
    measured: tuple[str, ...]         # the seed's studies with a run in this build
    missing: tuple[str, ...]          # the seed's studies without one (not registered, or no run)

    @property
    def tested(self) -> bool:
        """At least one of the seed's claims has a verdict in this build."""
        return bool(self.outcomes)

    @property
    def counts(self) -> dict[claimsmod.Verdict, int]:
        """The seed's claim rows by verdict (claims.VERDICTS order)."""
        return claimsmod.tally(self.outcomes)

    @property
    def model_rows(self) -> int:
        """How many of the seed's claim rows check a model's prediction, not a measurement."""
        return sum(o.claim.is_model for o in self.outcomes)

    @property
    def provisional_rows(self) -> int:
        """How many of the seed's claim rows are provisional (Claim.provisional: a known bias of the run)."""
        return sum(bool(o.claim.provisional) for o in self.outcomes)

    @property
    def seed_claims(self) -> int:
        """How many distinct seed claims its rows test (several rows may test one)."""
        return len(claimsmod.seed_claims(self.outcomes))


def glance_rows(outcomes: Sequence[Outcome], measured_studies: Iterable[str],
                seed_list: Sequence[seedsmod.Seed] = seedsmod.SEEDS) -> list[GlanceRow]:
    """One row per seed. Its headline is the first of the seed's headline claims that a run tests whose value is
    measured, else the seed's first claim row whose value is measured (a model check does not head a seed while a
    measurement can); only a seed whose every row is a model check is headed by one (its first named headline, else
    its first row), marked as such."""
    have = set(measured_studies)
    rows = []
    for seed in seed_list:
        mine = tuple(o for o in outcomes if o.claim.cite == seed.cite)
        by_id = {o.claim.id: o for o in mine}
        named = [by_id[c] for c in seed.headline_claims if c in by_id]
        measured = [o for o in (*named, *mine) if not o.claim.is_model]
        headline = next(iter(measured or named or mine), None)
        studies = list(seed.studies) + sorted({o.claim.id.split(".")[0] for o in mine} - set(seed.studies))
        rows.append(GlanceRow(seed, mine, headline, tuple(s for s in studies if s in have),
                              tuple(s for s in studies if s not in have)))
    return rows


def ours_cell(row: GlanceRow) -> str:
    """The headline claim's value of ours with its verdict, marked when it is a model's prediction or provisional;
    and the seed's studies that have no run in this build. Plain text (escape for TeX)."""
    missing = "; ".join(f"{s}: {NOT_MEASURED}" for s in row.missing)
    if row.headline is None:
        return f"{NOT_TESTED} ({missing})" if missing else NOT_TESTED
    o = row.headline
    marks = ([claimsmod.MODEL_MARK.strip("()")] if o.claim.is_model else []) + [o.verdict] + \
        ([PROVISIONAL] if o.claim.provisional else [])
    text = f"{claimsmod.ours_str(o)} ({'; '.join(marks)})"
    return f"{text}; {missing}" if missing else text


PROVISIONAL = "provisional"
GLANCE_COUNTS = ("rows (seed claims)", "agree", "differ", "inconclusive", "not judged", "calibration",
                 "model checks", PROVISIONAL)
GLANCE_HEADER = ("Seed", "What it measured", "Headline claim: published (source)", "Ours [95\\,\\% CI] (verdict)",
                 *(f"\\rotatebox{{90}}{{{h}}}" for h in GLANCE_COUNTS), "Model that explains it")


def glance_tex(rows: Sequence[GlanceRow]) -> str:
    """Table 1: per seed its headline claim (published, ours and its verdict) and the tally of all its claim rows
    by verdict, with how many of them check a model's prediction instead of a measurement and how many are
    provisional."""
    esc = macros.tex_escape
    body = []
    for r in rows:
        s = r.seed
        if r.headline is not None:
            c = r.headline.claim
            published = (f"{c.seed_label}, {esc(claimsmod.published_str(c))}: {esc(c.statement)} "
                         f"\\cite{{{s.cite}}}, {esc(c.where)}")
        else:
            published = f"{esc(s.published)} \\cite{{{s.cite}}}, {esc(s.where)}"
        if r.tested:
            counts = [str(n) for n in r.counts.values()]
            tallies = [f"{len(r.outcomes)} ({r.seed_claims})", *counts, str(r.model_rows), str(r.provisional_rows)]
        else:
            tallies = ["--"] * (len(claimsmod.VERDICTS) + 3)
        present = s.models_present()
        model = "; ".join(f"\\texttt{{{esc(m.module)}}}: {esc(m.explains)}" for m in present) or "none yet"
        body.append([s.id, esc(s.measured), published, esc(ours_cell(r)), *tallies, model])
    col = ">{\\raggedright\\arraybackslash}p"
    # the counts under rotated headers, so that the words get the width (\\scriptsize, \\tabcolsep 2pt: intro.tex)
    align = (f"l{col}{{0.19\\linewidth}}{col}{{0.23\\linewidth}}{col}{{0.12\\linewidth}}"
             + "r" * len(GLANCE_COUNTS) + f"{col}{{0.17\\linewidth}}")
    return macros.render_table(list(GLANCE_HEADER), body, align=align)


def glance_values(rows: Sequence[GlanceRow]) -> list[Value]:
    not_yet = [r.seed.id for r in rows if not r.tested]
    missing = sorted({s for r in rows for s in r.missing})
    return [Value("paper.seeds.total", float(len(rows)), "documents"),
            Value("paper.seeds.tested", float(len(rows) - len(not_yet)), "documents"),
            Value("paper.seeds.not_yet", float(len(not_yet)), "documents"),
            Value("paper.seeds.not_yet_list", text=join_words(not_yet) or "none"),
            Value("paper.seeds.studies_missing", text=join_words(missing) or "none"),
            Value("paper.seeds.coverage", text=coverage_text(len(rows) - len(not_yet), not_yet, missing))]


def coverage_text(tested: int, not_yet: Sequence[str], missing: Sequence[str]) -> str:
    """The introduction's clause on how many seeds this build tests (a build with every study reads
    differently from one without: no 'seeds none are not yet tested')."""
    if not not_yet:
        return "every one has at least one claim tested in this build"
    clause = (f"{tested} have at least one claim tested in this build; "
              f"seeds {join_words(not_yet)} are not yet tested")
    return f"{clause} (their studies, {join_words(missing)}, are not part of this build)" if missing else clause


def join_words(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------ environment and time (artifact appendix)

_VERSION_RE = re.compile(r"(\d+(?:\.\d+)+)")


def short_version(text: str | None) -> str:
    """'qemu-storage-daemon version 7.2.22 (Debian ...)' -> '7.2.22'; 'fio-3.33' -> '3.33'."""
    if not text:
        return "?"
    m = _VERSION_RE.search(text)
    return m.group(1) if m else text


def _distinct(items: Iterable[str]) -> str:
    seen: list[str] = []
    for i in items:
        if i not in seen:
            seen.append(i)
    return "; ".join(seen) if seen else "?"


def measured_minutes(m: Manifest) -> float:
    """The run's measuring time in minutes (Manifest.measured_seconds: a set of parts, the sum of theirs)."""
    return m.measured_seconds() / 60


def environment_values(manifests: Mapping[str, Manifest]) -> list[Value]:
    """paper.env.*: the host and tools of the runs (distinct values joined when runs differ); paper.time.*: each
    study's measured time (start to publication of its run) and the planned time from its plan."""
    ms = list(manifests.values())
    host = [m.provenance.get("host", {}) for m in ms]
    tools = [m.provenance.get("tools", {}) for m in ms]
    vals = [
        Value("paper.env.cpu", text=_distinct(str(h.get("cpu") or "?") for h in host)),
        Value("paper.env.cpus", text=_distinct(str(h.get("cpus") or "?") for h in host)),
        Value("paper.env.mem_gib", text=_distinct(f"{h['mem_kib'] / 2**20:.1f}" if h.get("mem_kib") else "?"
                                                  for h in host)),
        Value("paper.env.kernel", text=_distinct(str(h.get("kernel") or "?") for h in host)),
        Value("paper.env.machine", text=_distinct(str(h.get("machine") or "?") for h in host)),
        Value("paper.env.fio", text=_distinct(short_version(t.get("fio")) for t in tools)),
        Value("paper.env.qemu", text=_distinct(short_version(t.get("qemu-storage-daemon")) for t in tools)),
        Value("paper.env.nbdkit", text=_distinct(short_version(t.get("nbdkit")) for t in tools)),
        Value("paper.env.python", text=_distinct(short_version(t.get("python")) for t in tools)),
        Value("paper.env.runs", float(len(ms)), "runs"),
    ]
    total = 0.0
    for study, m in manifests.items():
        minutes = measured_minutes(m)
        total += minutes
        vals.append(Value(f"paper.time.{study}", minutes, "min", digits=1))
        planned = m.planned_seconds / 60 if m.planned_seconds > 0 else math.nan   # older runs recorded none
        vals.append(Value(f"paper.planned.{study}", planned, "min", digits=1))
    vals.append(Value("paper.time.total", total, "min", digits=1))
    return vals


# The artifact table's profiles: each one's published runs are shown. A full run takes hours, so not every study has
# one: full's time is also extrapolated from its plan's prediction and the quick runs' measured/planned ratio (a
# plan's prediction leaves out part of a run's time, e.g. snapshots and daemon start-up, which the ratio brings in),
# for every study: the whole paper-grade time before all of it is measured, and, beside a measured full run, the
# prediction it is held against.
MEASURED_PROFILES = ("smoke", "quick", "full")
BASIS = "quick"
EXTRAPOLATED = "full"
EXTRAPOLATED_KEY = "full_extrapolated"     # paper.time.<this>.*: the extrapolations (paper.time.full.*: measured)
# Runs shown per profile: the newest (what a build at that profile uses) and the one before it (the rerun the
# reproducibility section compares it with); older runs were mostly measured by older code.
RUNS_SHOWN = 2
NO_PLANNED_TIME = "its plan predicts no time"
# Marks in the table, explained in the caption (paper/sections/artifact.tex).
MARK_NO_RUN = "a"             # no published run of that profile
MARK_NO_EXTRAPOLATION = "b"   # no full time: why, in paper.time.full_extrapolated.gaps
MARK_EARLIER_PLAN = "c"       # a quick run planned with an earlier estimate than the plan's current one


@dataclass(frozen=True)
class StudyTimes:
    """One study's time at each profile, for the artifact table.

    runs: per profile in MEASURED_PROFILES, its newest published runs (at most RUNS_SHOWN, oldest first);
    planned_s: per profile, the run time the study's plan predicts now (Study.planned_seconds: the figure a run's
        manifest records as planned_seconds; 0 when the plan predicts none);
    no_planned_time: why the plan predicts none, in words (the plan's NO_PLANNED_TIME).
    """

    study: str
    notebook: str
    runs: Mapping[str, Sequence[Manifest]]
    planned_s: Mapping[str, float]
    no_planned_time: str = NO_PLANNED_TIME

    def measured(self, profile: str) -> list[float]:
        """Minutes from start to publication of the shown runs of a profile, oldest first."""
        return [measured_minutes(m) for m in self.runs.get(profile, ())]

    def newest(self, profile: str) -> float:
        """Minutes of the newest run of a profile (what a build at that profile uses); nan without one."""
        times = self.measured(profile)
        return times[-1] if times else math.nan

    def planned_now(self, m: Manifest) -> bool:
        """Whether a run was planned with the plan's current prediction (the ratio of a run planned by an earlier
        estimate would scale a different function than the full plan's prediction)."""
        now = self.planned_s.get(m.profile.name, 0.0)
        return now > 0 and math.isclose(m.planned_seconds, now, rel_tol=1e-6)

    def ratio_runs(self) -> list[Manifest]:
        return [m for m in self.runs.get(BASIS, ()) if self.planned_now(m)]

    def ratio(self) -> float:
        """Measured / planned time over the BASIS runs planned with the current prediction; nan without one."""
        runs = self.ratio_runs()
        if not runs:
            return math.nan
        return sum(measured_minutes(m) * 60 for m in runs) / sum(m.planned_seconds for m in runs)

    def why_not_extrapolated(self) -> str | None:
        """Why the full time cannot be extrapolated honestly, or None when it can."""
        if self.planned_s.get(EXTRAPOLATED, 0.0) <= 0 or self.planned_s.get(BASIS, 0.0) <= 0:
            return self.no_planned_time
        if not self.runs.get(BASIS):
            return f"no {BASIS} run is published"
        if not self.ratio_runs():
            return f"its {BASIS} runs were planned with an earlier estimate than its plan's current one"
        return None

    def extrapolated(self) -> float:
        """Minutes at EXTRAPOLATED: its plan's prediction × the BASIS runs' measured/planned ratio; nan when
        why_not_extrapolated says why not."""
        if self.why_not_extrapolated() is not None:
            return math.nan
        return self.planned_s[EXTRAPOLATED] / 60 * self.ratio()


def _mark(letter: str) -> str:
    return f"\\textsuperscript{{{letter}}}"


def _dash(letter: str) -> str:
    return f"---{_mark(letter)}"


def _times_cell(minutes: Sequence[float]) -> str:
    return ", ".join(macros.fmt(x, 1) for x in minutes) if minutes else _dash(MARK_NO_RUN)


def _planned_cell(t: StudyTimes) -> str:
    runs = list(t.runs.get(BASIS, ()))
    if not runs:
        return _dash(MARK_NO_RUN)
    if all(m.planned_seconds <= 0 for m in runs):
        return "---"
    return ", ".join(macros.fmt(m.planned_seconds / 60, 1) + ("" if t.planned_now(m) else _mark(MARK_EARLIER_PLAN))
                     for m in runs)


def _total(times: Sequence[float], n: int) -> str:
    have = [x for x in times if math.isfinite(x)]
    if not have:
        return "---"
    return macros.fmt(sum(have), 1) + ("" if len(have) == n else f" ({len(have)} of {n})")


def artifact_tex(times: Sequence[StudyTimes]) -> str:
    """The artifact table: per study its notebook, measured smoke and quick times, the quick plan's prediction and
    the measured/planned ratio, the full plan's prediction, the full time extrapolated from them and the measured
    full runs; a totals row (the newest run of each study, and the extrapolations)."""
    esc = macros.tex_escape
    rows = []
    for t in times:
        full_plan = t.planned_s.get(EXTRAPOLATED, 0.0)
        ratio = t.ratio()
        rows.append([esc(t.study), f"\\texttt{{{esc(t.notebook)}}}", _times_cell(t.measured("smoke")),
                     _times_cell(t.measured(BASIS)), _planned_cell(t),
                     macros.fmt(ratio, 2) if math.isfinite(ratio) else "---",
                     macros.fmt(full_plan / 60, 1) if full_plan > 0 else "---",
                     macros.fmt(t.extrapolated(), 1) if t.why_not_extrapolated() is None
                     else _dash(MARK_NO_EXTRAPOLATION), _times_cell(t.measured(EXTRAPOLATED))])
    n = len(times)
    rows.append(["\\midrule total", "", _total([t.newest("smoke") for t in times], n),
                 _total([t.newest(BASIS) for t in times], n), "", "", "",
                 _total([t.extrapolated() for t in times], n), _total([t.newest(EXTRAPOLATED) for t in times], n)])
    return macros.render_table(["study", "notebook", "smoke", "quick", "quick planned", "ratio", "full planned",
                                "full extrapolated", "full"], rows, align="llrrrrrrr")


def measured_clause(profile: str, studies: Sequence[str], minutes: Sequence[float]) -> str:
    """The artifact section's clause on a measured profile's total: the newest run of each study that has one
    (a build with runs of every study reads differently from one with some or none)."""
    have = [x for x in minutes if math.isfinite(x)]
    missing = [s for s, x in zip(studies, minutes, strict=True) if not math.isfinite(x)]
    if not have:
        return f"no study has a published {profile} run yet"
    total = f"{sum(have):.1f} min in all"
    if not missing:
        return f"the newest {profile} run of each of the {len(have)} studies took {total}"
    return (f"the newest {profile} runs of the {len(have)} of {len(minutes)} studies that have one took {total} "
            f"({join_words(missing)}: none yet)")


def extrapolated_clause(minutes: Sequence[float]) -> str:
    """The artifact section's clause on the extrapolated full total."""
    have = [x for x in minutes if math.isfinite(x)]
    if not have:
        return "no study's full time can be extrapolated from the published runs"
    where = f"all {len(have)} studies" if len(have) == len(minutes) else \
        f"the {len(have)} of {len(minutes)} studies where it can be formed"
    return f"{sum(have):.1f} min (about {sum(have) / 60:.1f} h) in all for {where}"


def time_values(times: Sequence[StudyTimes]) -> list[Value]:
    """paper.time.<profile>.total (min) over the newest run of each study that has one (full_extrapolated: the
    extrapolations), .studies how many studies that covers, of paper.time.studies, and .clause the same in words;
    paper.time.<profile>.<study> for each measured profile and the extrapolation; paper.time.full_extrapolated.gaps:
    why a study has no extrapolated full time ('none' when every one has)."""
    studies = [t.study for t in times]
    vals = [Value("paper.time.studies", float(len(times)), "studies")]
    per_profile = {p: [t.newest(p) for t in times] for p in MEASURED_PROFILES}
    per_profile[EXTRAPOLATED_KEY] = [t.extrapolated() for t in times]
    for profile, minutes in per_profile.items():
        have = [x for x in minutes if math.isfinite(x)]
        vals.append(Value(f"paper.time.{profile}.total", sum(have) if have else math.nan, "min", digits=1))
        vals.append(Value(f"paper.time.{profile}.studies", float(len(have)), "studies"))
        clause = extrapolated_clause(minutes) if profile == EXTRAPOLATED_KEY else \
            measured_clause(profile, studies, minutes)
        vals.append(Value(f"paper.time.{profile}.clause", text=clause))
    # each study's time per profile, as the artifact table prints it: the README quotes these (tests/test_readme.py)
    for key in (*MEASURED_PROFILES, EXTRAPOLATED_KEY):
        vals += [Value(f"paper.time.{key}.{s}", x, "min", digits=1)
                 for s, x in zip(studies, per_profile[key], strict=True)]
    gaps = [f"{t.study}: {why}" for t in times if (why := t.why_not_extrapolated()) is not None]
    vals.append(Value(f"paper.time.{EXTRAPOLATED_KEY}.gaps", text="; ".join(gaps) or "none"))
    return vals


# ------------------------------------------------------------------ the measurement path's ceiling (make bench)

SEEK_FIT_GOAL = 0.05   # the calibration's aim: every seek figure recovered within 5 % in every round (issue 14)

# bench/latest.json key -> (paper key, unit, digits, scale)
BENCH_KEYS: dict[str, tuple[str, str, int, float]] = {
    "harness_nbd_over_direct": ("nbd_over_direct_pct", "%", 0, 100.0),
    "harness_nbd_over_direct_min": ("nbd_over_direct_min_pct", "%", 0, 100.0),
    "harness_nbd_over_direct_max": ("nbd_over_direct_max_pct", "%", 0, 100.0),
    "harness_nbd_iops_median": ("nbd_iops", "IOPS", 0, 1.0),
    "harness_direct_iops_median": ("direct_iops", "IOPS", 0, 1.0),
    "harness_qsd_cpu_busy_median": ("qsd_cpu_busy_pct", "%", 0, 100.0),
    "harness_rounds": ("rounds", "rounds", 0, 1.0),
    "harness_nbd_multiconn_over_direct": ("nbd_multiconn_over_direct_pct", "%", 0, 100.0),
    "harness_nbd_multiconn_over_direct_min": ("nbd_multiconn_over_direct_min_pct", "%", 0, 100.0),
    "harness_nbd_multiconn_over_direct_max": ("nbd_multiconn_over_direct_max_pct", "%", 0, 100.0),
    "harness_null_over_direct": ("null_over_direct_pct", "%", 0, 100.0),
    "harness_nbd_io_uring_over_direct": ("nbd_io_uring_over_direct_pct", "%", 0, 100.0),
    "harness_nbd_io_uring_over_direct_min": ("nbd_io_uring_over_direct_min_pct", "%", 0, 100.0),
    "harness_nbd_io_uring_over_direct_max": ("nbd_io_uring_over_direct_max_pct", "%", 0, 100.0),
    "harness_qsd_cpu_us_per_io_nbd_io_uring": ("qsd_cpu_us_per_io_nbd_io_uring", "us", 1, 1.0),
    "harness_cpu_us_per_io_direct": ("cpu_us_per_io_direct", "us", 1, 1.0),
    "harness_cpu_us_per_io_nbd": ("cpu_us_per_io_nbd", "us", 1, 1.0),
    "harness_cpu_busy_cores_direct": ("cpu_busy_cores_direct", "CPUs", 2, 1.0),
    "harness_cpu_busy_cores_nbd": ("cpu_busy_cores_nbd", "CPUs", 2, 1.0),
    "harness_qsd_cpu_us_per_io_nbd": ("qsd_cpu_us_per_io_nbd", "us", 1, 1.0),
    "harness_qsd_cpu_us_per_io_null": ("qsd_cpu_us_per_io_null", "us", 1, 1.0),
    "harness_fio_cpu_us_per_io_nbd": ("fio_cpu_us_per_io_nbd", "us", 1, 1.0),
    "harness_fio_cpu_us_per_io_direct": ("fio_cpu_us_per_io_direct", "us", 1, 1.0),
    "harness_nbd_over_direct_cpu_bound": ("nbd_over_direct_cpu_bound_pct", "%", 0, 100.0),
    "harness_qsd_thread_ceiling_over_direct": ("qsd_thread_ceiling_over_direct_pct", "%", 0, 100.0),
    "cofw_engine_iops_median": ("cofw_iops", "IOPS", 0, 1.0),
    "cofw_engine_over_raw": ("cofw_over_raw_pct", "%", 0, 100.0),
    "cofw_first_write_over_raw": ("cofw_first_write_over_raw_pct", "%", 0, 100.0),
    "cofw_first_write_iops_median": ("cofw_first_write_iops", "IOPS", 0, 1.0),
    "emulator_round_trip_us": ("emulator_round_trip_us", "us", 0, 1.0),
    "emulator_accuracy_qd1": ("emulator_accuracy_qd1_pct", "%", 1, 100.0),
    "emulator_accuracy_qd32": ("emulator_accuracy_qd32_pct", "%", 1, 100.0),
    "emulator_accuracy_qd1_min": ("emulator_accuracy_qd1_min_pct", "%", 1, 100.0),
    "emulator_accuracy_qd1_max": ("emulator_accuracy_qd1_max_pct", "%", 1, 100.0),
    "emulator_accuracy_qd1_explained": ("emulator_accuracy_qd1_explained_pct", "%", 1, 100.0),
    "emulator_round_trip_idle_us": ("emulator_round_trip_idle_us", "us", 0, 1.0),
    "emulator_accuracy_qd1_explained_idle": ("emulator_accuracy_qd1_explained_idle_pct", "%", 1, 100.0),
    "emulator_release_late_us_qd1": ("emulator_release_late_us_qd1", "us", 0, 1.0),
    # the compiled emulator at the plugin boundary (issue 45): model time / callback entry-to-return time
    "emulator_plugin_accuracy_qd1": ("emulator_plugin_accuracy_qd1_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_qd1_min": ("emulator_plugin_accuracy_qd1_min_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_qd1_max": ("emulator_plugin_accuracy_qd1_max_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_qd32": ("emulator_plugin_accuracy_qd32_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_qd32_min": ("emulator_plugin_accuracy_qd32_min_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_qd32_max": ("emulator_plugin_accuracy_qd32_max_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_flash_tier": ("emulator_plugin_accuracy_flash_tier_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_flash_tier_min": ("emulator_plugin_accuracy_flash_tier_min_pct", "%", 1, 100.0),
    "emulator_plugin_accuracy_flash_tier_max": ("emulator_plugin_accuracy_flash_tier_max_pct", "%", 1, 100.0),
    # the flash tier under the tiering study's load: the emulator's queue over fio's depth (starved clients show here)
    "emulator_flash_tier_queue_share": ("emulator_flash_tier_queue_share_pct", "%", 0, 100.0),
    "emulator_flash_tier_queue_share_min": ("emulator_flash_tier_queue_share_min_pct", "%", 0, 100.0),
    "emulator_flash_tier_queue_share_max": ("emulator_flash_tier_queue_share_max_pct", "%", 0, 100.0),
    "emulator_flash_tier_spin_cpu": ("emulator_flash_tier_spin_cpu_pct", "%", 1, 100.0),
    "emulator_overhead_us_per_command": ("emulator_overhead_us_per_command", "us", 1, 1.0),
    "emulator_cpu_us_per_command": ("emulator_cpu_us_per_command", "us", 0, 1.0),
    "emulator_accuracy_rounds": ("emulator_rounds", "rounds", 0, 1.0),
    "seek_fit_max_rel_error": ("seek_fit_max_rel_error_pct", "%", 1, 100.0),
    "seek_fit_max_rel_error_max": ("seek_fit_max_rel_error_max_pct", "%", 1, 100.0),
    "seek_fit_rounds": ("seek_fit_rounds", "rounds", 0, 1.0),
    "seek_fit_rel_error_track_to_track": ("seek_fit_rel_error_track_to_track_pct", "%", 1, 100.0),
    "seek_fit_jitter_us": ("seek_fit_jitter_us", "us", 0, 1.0),
    "tcg_guest_boot_s": ("tcg_guest_boot_s", "s", 1, 1.0),
    "crosscheck_loss_on_disk_metadata": ("crosscheck_loss_on_disk_pct", "%", 0, 1.0),
    "crosscheck_loss_on_disk_metadata_low": ("crosscheck_loss_on_disk_low_pct", "%", 0, 1.0),
    "crosscheck_loss_on_disk_metadata_high": ("crosscheck_loss_on_disk_high_pct", "%", 0, 1.0),
    "crosscheck_loss_in_memory_metadata": ("crosscheck_loss_in_memory_pct", "%", 0, 1.0),
    "crosscheck_loss_in_memory_metadata_low": ("crosscheck_loss_in_memory_low_pct", "%", 0, 1.0),
    "crosscheck_loss_in_memory_metadata_high": ("crosscheck_loss_in_memory_high_pct", "%", 0, 1.0),
    "crosscheck_base_iops": ("crosscheck_base_iops", "IOPS", 0, 1.0),
    "crosscheck_rounds": ("crosscheck_rounds", "pairs", 0, 1.0),
}


def bench_values(path: Path) -> list[Value]:
    """paper.bench.*: the figures of the committed `make bench` run; none if it has not been run (a paper that
    quotes them then fails to build, naming the key)."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return []
    vals = []
    for key, (name, unit, digits, scale) in BENCH_KEYS.items():
        x = data.get(key)
        if isinstance(x, int | float) and math.isfinite(x):
            vals.append(Value(f"paper.bench.{name}", float(x) * scale, unit, digits=digits))
    worst = data.get("seek_fit_max_rel_error_max")
    if isinstance(worst, int | float) and math.isfinite(worst):
        vals.append(Value("paper.bench.seek_fit_goal", text="within" if worst <= SEEK_FIT_GOAL else "above"))
    native, uring = data.get("harness_nbd_over_direct"), data.get("harness_nbd_io_uring_over_direct")
    if all(isinstance(x, int | float) and math.isfinite(x) for x in (native, uring)):
        # the file node's submission mode (qsd.FILE_AIO) was chosen from this comparison; say how it came out
        vals.append(Value("paper.bench.io_uring_vs_native", text="below" if uring < native else "not below"))
    multi = [data.get(k) for k in ("harness_nbd_multiconn_over_direct", "harness_nbd_over_direct_min",
                                   "harness_nbd_over_direct_max")]
    if all(isinstance(x, int | float) and math.isfinite(x) for x in multi):
        # two connections against the one the studies use: the rounds' range, not the two medians, says whether
        # a second connection measurably moved the ratio
        vals.append(Value("paper.bench.multiconn_vs_one", text=multiconn_vs_one(*multi)))
    qd1 = [data.get(k) for k in ("emulator_accuracy_qd1_explained_idle", "emulator_accuracy_qd1",
                                 "emulator_accuracy_qd1_explained")]
    if all(isinstance(x, int | float) and math.isfinite(x) for x in qd1):
        # the wake-up explanation of the QD1 shortfall predicts the measured accuracy between its two bounds
        vals.append(Value("paper.bench.qd1_between", text="lies" if qd1[0] <= qd1[1] <= qd1[2] else "does not lie"))
    vals.append(Value("paper.bench.provenance", text=bench_provenance(data)))
    return vals


def multiconn_vs_one(multiconn: float, one_min: float, one_max: float) -> str:
    """Where two connections' median ratio lies against the range of one connection's rounds, in words."""
    if multiconn > one_max:
        return "above the range of one connection's rounds"
    if multiconn < one_min:
        return "below the range of one connection's rounds"
    return "within the range of one connection's rounds"


def bench_provenance(data: dict) -> str:
    """Which commit, day and CPU measured the bench's figures: per group where each group recorded its own
    (`meta_<group>_*`, bench.group_meta); else the run's (`meta_*`), as files before per-group provenance have it."""
    def where(prefix: str) -> str:
        commit = str(data.get(f"{prefix}commit") or "")
        parts = [f"commit {commit[:10]}{'+' if data.get(f'{prefix}commit_dirty') else ''}" if commit else "",
                 str(data.get(f"{prefix}date_utc") or "")[:10], str(data.get(f"{prefix}cpu_model") or "")]
        return ", ".join(p for p in parts if p)
    groups = sorted(k.removeprefix("meta_").removesuffix("_date_utc") for k in data
                    if k.startswith("meta_") and k.endswith("_date_utc") and k != "meta_date_utc")
    per_group = {g: where(f"meta_{g}_") for g in groups}
    if len(set(per_group.values())) > 1:
        return "; ".join(f"{g}: {w}" for g, w in per_group.items())
    return next(iter(per_group.values()), None) or where("meta_") or "not recorded"
