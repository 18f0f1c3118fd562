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
    from .record import RunRecord, published_runs

    runs = published_runs(rig, study.id, profile.name)
    minutes = measured_minutes(RunRecord.load(runs[-1]).manifest) if runs else math.nan
    if not math.isnan(minutes):
        basis = f"measured: newest {profile.name} run {runs[-1].name}"
    else:
        planned = study.planned_seconds(profile)
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
