"""What measuring a study will take, said before it starts, in one form for every study: minutes, disk, root.

Minutes come from the newest published run of the study at that rig and profile (from its start, once it held the
measurement lock, to its publication: article.measured_minutes, the artifact table's figure), else from its plan's
prediction (Study.planned_seconds), and every line says which. `snaptax plan` prints one line per study;
`make paper` prints a running total before each notebook (notebooks.execute_all).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import profiles
from .plan import DiskNeed
from .studies import Study


@dataclass(frozen=True)
class Expectation:
    """One study at one profile: `minutes` of measuring (nan when neither a run nor the plan gives a time), where they
    come from in words (`basis`), the disk its work directory needs while it runs, and whether measuring needs
    root."""

    study: str
    profile: str
    minutes: float
    basis: str
    disk: DiskNeed
    needs_root: bool

    @property
    def known(self) -> bool:
        return not math.isnan(self.minutes)

    def minutes_text(self) -> str:
        return f"{self.minutes:.1f} min" if self.known else "? min"


def expect(study: Study, rig: str, profile: profiles.Profile) -> Expectation:
    from .paper.article import measured_minutes
    from .record import load_run, readable_runs, short_run_id

    runs = readable_runs(rig, study.id, profile.name)
    minutes = measured_minutes(load_run(runs[-1]).manifest) if runs else math.nan
    if not math.isnan(minutes):
        basis = f"measured: newest {profile.name} run {short_run_id(runs[-1].name)}"
    else:
        planned = study.planned_seconds(profile, rig)
        none = f"no {profile.name} run on rig {rig}"
        if planned > 0:
            minutes, basis = planned / 60, f"plan's prediction: {none}"
        else:
            basis = f"{none}, and {study.no_planned_time()}"
    return Expectation(study.id, profile.name, minutes, basis, study.disk(profile), study.measuring_needs_root)


HEADER = ("study", "expect", "disk while running", "root to measure", "expected minutes from")


def table(expectations: Sequence[Expectation]) -> list[str]:
    """One line per study in one form (under a header), then the total of more than one."""
    rows = [HEADER] + [(e.study, e.minutes_text(), str(e.disk), "needed" if e.needs_root else "not needed", e.basis)
                       for e in expectations]
    w = [max(len(r[i]) for r in rows) for i in range(len(HEADER) - 1)]
    lines = ["  ".join((r[0].ljust(w[0]), r[1].rjust(w[1]), r[2].ljust(w[2]), r[3].ljust(w[3]), r[4])) for r in rows]
    if len(expectations) < 2:
        return lines
    known = [e.minutes for e in expectations if e.known]
    unknown = [e.study for e in expectations if not e.known]
    total = f"total {'at least ' if unknown else ''}{sum(known):.1f} min of measuring"
    if unknown:
        total += f" ({', '.join(unknown)} not known)"
    return [*lines, total]


def power_lines(study: Study, rig: str, profile: profiles.Profile) -> list[str]:
    """Per judged claim of a study: the independent replicates the verdict rule needs for 80 % power
    (power.plan_line) at the spread between replicates in the newest run (at this profile, else at quick: the
    spread is the measurement's, not the profile's), and what that costs if a run's time grows with its replicates
    (the newest run's minutes / its replicates × those needed). Claims without such a spread say so. Each claim at
    its registered tolerance and role (snaptax.judged: the registration that run was measured under)."""
    from . import claims, derived, judged, power
    from .paper.article import measured_minutes
    from .record import load_run, readable_runs, short_run_id

    runs = readable_runs(rig, study.id, profile.name) or readable_runs(rig, study.id, "quick")
    if not runs:
        return [f"power: no published run of {study.id} on rig {rig} to measure a spread from"]
    manifest = load_run(runs[-1]).manifest
    found = derived.values_of(runs[-1])
    outcomes = judged.for_run([claims.from_json(row) for row in found.claims], manifest.registration,
                              judged.inferred_in(found))
    minutes = measured_minutes(manifest)
    lines = [f"power per claim ({power.POWER:.0%}, two one-sided tests at the claim's tolerance; spread from run "
             f"{short_run_id(runs[-1].name)}):"]
    for o in outcomes:
        p = power.plan_line(o)
        cost = ""
        if p.needed is not None and p.n_now > 0 and math.isfinite(minutes):
            cost = f"; ≈{minutes * p.needed / p.n_now:.0f} min of measuring at that run's time per replicate"
        lines.append(f"  {p.line()}{cost}")
    return lines if outcomes else [*lines, "  (the study judges no claim)"]


def part_lines(study: Study, rig: str, profile: profiles.Profile) -> list[str]:
    """A study measured in parts (issue 49.1): each part with its plan's predicted minutes and the command that
    measures it, and the sets of part runs at this profile that lack a part (never read until complete). Empty for
    a study measured whole only. The parts are those of a rig with every engine the study uses (measuring narrows
    them to the rig's)."""
    from .record import incomplete_sets

    seconds = study.part_seconds(profile, rig)
    if not seconds:
        return []
    lines = [f"parts (each a run of its own, read together once all are published; python -m snaptax run {study.id} "
             f"--profile {profile.name} --part NAME):"]
    lines += [f"  {name}: plan's prediction {s / 60:.1f} min" for name, s in seconds.items()]
    lines += [f"  {gap.line()}" for gap in incomplete_sets(rig, study.id, profile.name)]
    return [*lines, ""]
